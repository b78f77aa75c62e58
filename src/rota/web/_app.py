"""Assembly of the dashboard: templates, middleware, routers, metrics."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import jinja2
import orjson
from fastapi import Depends, FastAPI, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.middleware.sessions import SessionMiddleware
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rota import __version__
from rota._time import shown_utc
from rota._users import SESSION_MAX_AGE
from rota._wording import attempt_text, call_text, lag_text, retry_text, snooze_reason
from rota.app import App
from rota.commands import command_line_of, shown_kwargs
from rota.models import Job
from rota.scheduling.history import run_time
from rota.stores import Store, redact_url
from rota.web import _api, _crawls, _forms, _logs, _pages
from rota.web._auth import Auth, Identity
from rota.web._deps import Context, api_viewer, context
from rota.web._errors import ErrorFrame, install_error_handlers
from rota.web._metrics import registry_for

__all__ = ["create_app"]

_HERE = Path(__file__).parent
NONE = "\u2013"  # shown for missing values
NAV = (
    ("/", "Overview"),
    ("/jobs", "Jobs"),
    ("/queues", "Queues"),
    ("/schedules", "Schedules"),
    ("/send", "Send"),
    ("/workers", "Workers"),
    ("/audit", "Audit"),
    ("/export", "Export"),
)
#: Shown after "Workers" when the app declares crawlers or the store has a crawl's jobs.
CRAWLS_NAV = ("/crawls", "Crawls")
SESSION_COOKIE = "rota_session"

_SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self';"
        b" frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
]


class SecurityHeaders:
    """Adds a strict Content-Security-Policy and friends to every answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = list(message["headers"]) + _SECURITY_HEADERS
            await send(message)

        await self.app(scope, receive, with_headers)


# -- template filters ---------------------------------------------------------


def _when(t: float | None) -> str:
    """A time in UTC to the second; a stored time no date can show (written by
    an older rota or by hand) as it is: ``epoch -90000000000``."""
    if t is None:
        return NONE
    moment = shown_utc(t)
    return f"epoch {t!r}" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _iso(t: float | None) -> str:
    """A time in ISO 8601, or "" when there is none or no date can show it."""
    moment = None if t is None else shown_utc(t)
    return "" if moment is None else moment.isoformat()


def _dur(seconds: float | None) -> str:
    if seconds is None:
        return NONE
    s = abs(seconds)
    if s < 1:
        return f"{s * 1000:.0f} ms"
    if s < 120:
        return f"{s:.1f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    if s < 172800:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.0f} d"


def _ago(t: float | None, now: float | None = None) -> str:
    if t is None:
        return NONE
    delta = (now if now is not None else time.time()) - t
    if abs(delta) < 1:
        return "now"
    return f"{_dur(delta)} ago" if delta > 0 else f"in {_dur(delta)}"


def _pretty(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()


def _num(value: float | None) -> str:
    if value is None:
        return NONE
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _call_preview(item: Any, width: int = 120) -> str:
    return call_text(item.args, shown_kwargs(item.task, item.kwargs), width)


def _job_command(job: Job) -> str:
    """The command line a ``rota.cmd`` job runs, else ``""``."""
    return command_line_of(job.task, job.args)


def _job_kwargs(job: Job) -> Any:
    """A job's keyword arguments as its page shows them: a command's
    environment with its names only."""
    return shown_kwargs(job.task, job.kwargs)


def _templates() -> Jinja2Templates:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        when=_when,
        iso=_iso,
        dur=_dur,
        ago=_ago,
        pretty=_pretty,
        num=_num,
        call_preview=_call_preview,
        attempts=attempt_text,
        retries=retry_text,
        snooze_reason=snooze_reason,
        run_time=run_time,
        command_line=_job_command,
        shown_kwargs=_job_kwargs,
    )
    return Jinja2Templates(env=env, context_processors=[_base_context])


def _base_context(request: Request) -> dict[str, Any]:
    """Values every page's frame needs: navigation, role, CSRF token, flashes.
    The login page sets ``request.state.bare_frame`` and gets a bare frame: no
    navigation and no store label for visitors not yet known, and no store
    call. Error pages (``request.state.error_frame``) get the navigation, and
    the store label and Log out only for a caller the dashboard knows."""
    if getattr(request.state, "bare_frame", False):
        return {
            "nav": (),
            "active": "",
            "auth_enabled": False,
            "csrf": Auth.csrf_token(request),
            "flashes": request.session.pop("flash", []),
            "store_label": "",
            "page_title": "rota",
        }
    error = getattr(request.state, "error_frame", None)
    if isinstance(error, ErrorFrame):
        return _error_context(request, error)
    ctx = context(request)
    nav = _nav(ctx)
    active, page_title = _active(request.url.path, nav)
    values: dict[str, Any] = {
        "nav": nav,
        "active": active,
        "auth_enabled": not ctx.auth.open,
        "csrf": Auth.csrf_token(request),
        "flashes": request.session.pop("flash", []),
        "store_label": _store_label(ctx.store, ctx.app.url, ctx.app.read_url),
        "page_title": page_title,
    }
    return values


def _nav(ctx: Context) -> tuple[tuple[str, str], ...]:
    """The navigation's links: Crawls after Workers when the app has crawls."""
    if not _crawls.has_crawls(ctx):
        return NAV
    at = [href for href, _ in NAV].index("/workers") + 1
    return (*NAV[:at], CRAWLS_NAV, *NAV[at:])


def _active(path: str, nav: tuple[tuple[str, str], ...]) -> tuple[str, str]:
    """The navigation's link lit for ``path`` and the page's title."""
    # The crawl pages also answer where the navigation has no link to them
    # (an app with no crawl): titled as themselves, lighting no tab.
    pages = nav if CRAWLS_NAV in nav else (*nav, CRAWLS_NAV)
    active = next((href for href, _ in reversed(pages) if path.startswith(href)), "/")
    return active, next((label for href, label in pages if href == active), "rota")


def _error_context(request: Request, error: ErrorFrame) -> dict[str, Any]:
    """An error page's frame: the navigation, lighting the section it is
    in, so the way on is a click. For a caller not known (not logged in, a
    refused host, a server error) no store label and no store call: a
    stranger learns nothing, and the page renders while the store is down."""
    ctx = context(request)
    caller = error.identity
    nav = NAV if caller is None else _nav(ctx)
    path = request.url.path  # (an unknown path lights no tab: not even Overview)
    active = next((href for href, _ in reversed(nav) if path.startswith(href) and href != "/"), "")
    known = caller is not None
    return {
        "nav": nav,
        "active": active,
        "auth_enabled": caller is not None and not caller.local,  # (Log out)
        "csrf": Auth.csrf_token(request),
        "flashes": request.session.pop("flash", []),
        "store_label": redact_url(ctx.app.url) if known else "",
        "page_title": "rota",
    }


def _store_label(store: Store, url: str, read_url: str | None) -> str:
    """The store the pages show, and the replica they read from when there
    is one (``store``, the reader), with how far it trails."""
    label = redact_url(url)  # (its scheme names the kind of store)
    if read_url is None:
        return label
    return f"{label}, pages read from {redact_url(read_url)}{lag_text(store)}"


# -- assembly ---------------------------------------------------------------------


def metrics(request: Request, _: Annotated[Identity, Depends(api_viewer)]) -> Response:
    """Prometheus text format, read from the store now."""
    data = generate_latest(context(request).registry)
    return Response(data, media_type=CONTENT_TYPE_LATEST)


def create_app(
    app: App,
    *,
    token: str | None = None,
    viewer_token: str | None = None,
    secret: str | None = None,
) -> FastAPI:
    """The dashboard and REST API of ``app`` as an ASGI application.

    ``token`` grants the operator role (read and act), ``viewer_token`` the
    viewer role (read only). With no token everyone is operator, and only
    requests to a loopback host name are answered. ``secret`` signs session
    cookies; without it a random one is made, so sessions end when the
    process restarts. Serve it with any ASGI server, or ``rota web APP``.
    """
    auth = Auth(token, viewer_token, secret, app)
    templates = _templates()
    api = FastAPI(
        title="rota",
        version=__version__,
        description="Inspect and steer a rota cluster: queues, jobs, schedules, workers, "
        "limits and results. Authenticate with `Authorization: Bearer TOKEN`.",
        openapi_url="/api/openapi.json",
        docs_url=None,
        redoc_url=None,
    )
    api.state.rota = Context(app, auth, registry_for(lambda: app.reader), templates)
    install_error_handlers(api, templates)
    api.include_router(_forms.router)  # first: its paths are more specific than _pages'
    api.include_router(_logs.router)
    api.include_router(_api.router)
    api.include_router(_crawls.api)
    api.include_router(_pages.router)
    api.include_router(_crawls.router)
    api.add_api_route("/metrics", metrics, methods=["GET"], include_in_schema=False)
    api.mount("/static", StaticFiles(directory=_HERE / "static"), name="static")
    api.add_middleware(
        SessionMiddleware,
        secret_key=auth.secret,
        session_cookie=SESSION_COOKIE,
        max_age=SESSION_MAX_AGE,
        same_site="lax",
    )
    api.add_middleware(SecurityHeaders)
    return api
