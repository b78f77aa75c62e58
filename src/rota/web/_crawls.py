"""The crawl pages (``/crawls``, ``/crawls/NAME``) and their JSON under ``/api/crawls``.

Everything shown is read by :mod:`rota.crawl.report` through the store's
inspection verbs; nothing here writes. The pages need the ``crawl`` extra
(the app that declares crawlers has it); without it they answer 404 and
the navigation has no link to them.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request
from fastapi.responses import Response

from rota._validate import MAX_NAME_LENGTH
from rota.errors import NotFound
from rota.web import _ops
from rota.web._api import _errors
from rota.web._auth import Identity, Role
from rota.web._chart import chart
from rota.web._deps import Context, api_viewer, context, page_viewer

__all__ = ["CrawlLive", "CrawlView", "api", "has_crawls", "router"]

router = APIRouter(include_in_schema=False)
api = APIRouter(
    prefix="/api",
    dependencies=[Depends(api_viewer)],
    responses=_errors(400, 401, 403, 404, 422),  # as the rest of the API answers
)

Viewer = Annotated[Identity, Depends(page_viewer)]
Name = Annotated[str, Path(min_length=1, max_length=MAX_NAME_LENGTH)]

#: Failed-attempt kinds shown as columns, in order (see rota.crawl.outcomes).
ERROR_COLUMNS = (
    "4xx",
    "5xx",
    "throttled",
    "timeout",
    "connection",
    "robots-disallowed",
    "parse",
    "lost",
    "other",
)


def _reports() -> ModuleType:
    """:mod:`rota.crawl.report`, or :class:`NotFound` without the crawl extra."""
    try:
        from rota.crawl import report
    except ImportError as exc:
        detail = f"the crawl pages need the crawl extra: pip install 'rota[crawl]' ({exc})"
        raise NotFound(detail) from None
    return report


def has_crawls(ctx: Context) -> bool:
    """Whether the app declares crawlers or the store has a crawl's jobs
    (for the navigation; False when the crawl extra or the store is missing)."""
    try:
        reports = _reports()
        if reports.declared(ctx.app):
            return True
        names = {row.task for row in ctx.store.totals()}
        return bool(reports.crawl_names(names))
    except Exception:  # the frame of every page, error pages too: never fail it
        return False


def _known(ctx: Context, name: str) -> bool:
    reports = _reports()
    if name in reports.declared(ctx.app):
        return True
    return name in reports.crawl_names({row.task for row in ctx.store.totals()})


@dataclass(frozen=True, slots=True)
class CrawlLive:
    """The cheap, polled part of a crawl page: fetch attempts per minute."""

    now: float
    chart: list[_ops.ChartPoint]


@dataclass(frozen=True, slots=True)
class CrawlView:
    """A crawl's report (see :mod:`rota.crawl.report`) with its per-minute chart."""

    # a rota.crawl.report.CrawlReport, typed loosely: the schema is built
    # where rota.crawl may not be importable
    report: Any
    chart: list[_ops.ChartPoint]


def _report(request: Request, name: str) -> CrawlView:
    ctx = context(request)
    found = _reports().report(ctx.app, ctx.store, name)
    if found is None:
        raise NotFound(f"crawl {name!r} not found")
    return CrawlView(found, _ops.minute_points(found.minutes, found.now))


# -- pages ---------------------------------------------------------------------


@router.get("/crawls")
def crawls_page(request: Request, identity: Viewer) -> Response:
    """Every crawl with its fetches, all time and lately."""
    ctx = context(request)
    found = _reports().summaries(ctx.app, ctx.store)
    return _render(request, identity, "crawls.html", crawls=found)


@router.get("/crawls/{name}")
def crawl_page(request: Request, identity: Viewer, name: str) -> Response:
    """One crawl: a table per host and its fetches per minute."""
    view = _report(request, name)
    report = view.report
    return _render(
        request,
        identity,
        "crawl.html",
        r=report,
        chart=chart(view.chart),
        now=report.now,
        error_columns=ERROR_COLUMNS,
    )


def _render(request: Request, identity: Identity, name: str, **values: object) -> Response:
    ctx = context(request)
    values.setdefault("now", ctx.store.now())
    values.update(identity=identity, can_act=identity.role >= Role.OPERATOR)
    return ctx.templates.TemplateResponse(request, name, values)


# -- API -------------------------------------------------------------------------


@api.get("/crawls", summary="Crawls with their fetch attempts")
def list_crawls(request: Request) -> list[object]:
    """Every crawl the app declares or the store has fetch jobs of: fetch
    attempts succeeded and failed, all time, in the last hour and 5 minutes."""
    ctx = context(request)
    found: list[object] = _reports().summaries(ctx.app, ctx.store)
    return found


@api.get("/crawls/{name}", summary="One crawl: per host figures and fetches per minute")
def get_crawl(request: Request, name: Name) -> CrawlView:
    """Per host: pages fetched, answers and failed attempts by kind, queue
    depth, level and ceiling, rate, pause, robots.txt; the fetch task's
    attempts per minute over the last hour (``chart``)."""
    return _report(request, name)


@api.get("/crawls/{name}/live", summary="A crawl's fetch attempts per minute (cheap; polled)")
def crawl_live(request: Request, name: Name) -> CrawlLive:
    """The chart of the crawl page, polled every 2 s."""
    ctx = context(request)
    store = ctx.store
    if not _known(ctx, name):
        raise NotFound(f"crawl {name!r} not found")
    now = store.now()
    task = f"{name}.fetch"
    rows = [r for r in store.throughput(now - _ops.CHART_MINUTES * 60) if r.task == task]
    return CrawlLive(now, _ops.minute_points(rows, now))
