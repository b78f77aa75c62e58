"""Server-rendered pages. Each calls the same ``_ops`` functions as the API.

Reads are plain GETs; actions are POSTed forms carrying the session's CSRF
token, answered with a redirect (303) and a one-line flash message.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from rota import errors
from rota._log_runs import LogHeadings
from rota.admin import Admin
from rota.diagnose import diagnose, job_problem
from rota.errors import InvalidArgument, JobNotFound
from rota.export import FIELDS
from rota.models import JobState, QueueInfo, parse_state
from rota.scheduling.history import schedule_runs, upcoming_fires
from rota.stores.base import MAX_LOG_PAGE, Store
from rota.web import _ops
from rota.web._auth import CSRF_FIELD, Forbidden, Identity, Role
from rota.web._chart import chart, day_chart, runs_chart
from rota.web._deps import context, page_operator, page_viewer

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

Viewer = Annotated[Identity, Depends(page_viewer)]
Operator = Annotated[Identity, Depends(page_operator)]

_STATES = list(JobState)
_PAGE_SIZES = (20, 50, 100, 200)
_AUDIT_PAGE = 50


def _store(request: Request) -> Store:
    return context(request).store


def _admin(request: Request) -> Admin:
    return context(request).app.admin


def _render(
    request: Request, name: str, identity: Identity, *, status: int = 200, **values: Any
) -> Response:
    values.setdefault("now", _store(request).now())
    values.update(
        identity=identity,
        can_act=identity.role >= Role.OPERATOR,
        states=_STATES,
        here=_here(request),
    )
    return context(request).templates.TemplateResponse(request, name, values, status_code=status)


def _here(request: Request) -> str:
    query = request.url.query
    return request.url.path + (f"?{query}" if query else "")


def flash(request: Request, kind: str, text: str) -> None:
    """Queue a message for the next page the session shows."""
    messages = list(request.session.get("flash", []))
    messages.append({"kind": kind, "text": text})
    request.session["flash"] = messages[-5:]


def _safe_next(value: object, default: str) -> str:
    """A local path to go back to; anything else (other hosts) becomes ``default``."""
    if isinstance(value, str) and value.startswith("/") and not value.startswith(("//", "/\\")):
        return value
    return default


async def _act(request: Request, action: Callable[[], str], default_next: str) -> Response:
    """Run ``action`` (which returns the flash text) and redirect back."""
    form = await request.form()
    try:
        flash(request, "ok", await run_in_threadpool(action))
    except (_ops.Conflict, _ops.NotFound, InvalidArgument, JobNotFound, errors.Forbidden) as exc:
        flash(request, "error", str(exc))
    return RedirectResponse(_safe_next(form.get("next"), default_next), status_code=303)


# -- login -------------------------------------------------------------------


@router.get("/login")
def login_form(request: Request, next: str = "/") -> Response:
    """The login form (only shown when a token is configured or users exist)."""
    ctx = context(request)
    if ctx.auth.open:
        return RedirectResponse(_safe_next(next, "/"), status_code=303)
    return _login_page(request, _safe_next(next, "/"), None, 200)


def _login_page(request: Request, target: str, error: str | None, status: int) -> Response:
    auth = context(request).auth
    values: dict[str, Any] = {"next": target, "error": error, "identity": None}
    values.update(users_enabled=auth.has_users, tokens_enabled=auth.has_tokens)
    request.state.bare_frame = True  # no navigation or store name before a login
    return context(request).templates.TemplateResponse(
        request, "login.html", values, status_code=status
    )


@router.post("/login")
async def login(request: Request) -> Response:
    """Check the user name and password, or the token, and start a session."""
    ctx = context(request)
    form = await request.form()
    target = _safe_next(form.get("next"), "/")
    if ctx.auth.open:
        return RedirectResponse(target, status_code=303)
    csrf, expected = form.get(CSRF_FIELD), request.session.get("csrf")
    if not isinstance(csrf, str) or csrf != expected:
        return _login_page(request, target, "Your session expired; please try again.", 403)
    failed = await ctx.auth.log_in_form(request, form)
    if failed is None:
        return RedirectResponse(target, status_code=303)
    return _login_page(request, target, *failed)


@router.post("/logout")
async def logout(request: Request) -> Response:
    """End the session (the CSRF token guards against forced log-outs)."""
    form = await request.form()
    csrf = form.get(CSRF_FIELD)
    if isinstance(csrf, str) and csrf == request.session.get("csrf"):
        context(request).auth.log_out(request)
    return RedirectResponse("/login", status_code=303)


# -- overview ----------------------------------------------------------------


@router.get("/")
def overview_page(request: Request, identity: Viewer, period: str = "hour") -> Response:
    """Queues, throughput windows, the live chart (of the last hour, a bar a
    minute, or with ``?period=day`` of the last day) and workers."""
    if period not in ("hour", "day"):
        raise InvalidArgument(f"period must be hour or day, not {period!r}")
    store = _store(request)
    infos = store.queues()  # counts every job: read once for both
    ov = _ops.overview(store, infos)
    problems = diagnose(store, infos)
    return _render(
        request,
        "overview.html",
        identity,
        ov=ov,
        period=period,
        chart=chart(ov.live.chart) if period == "hour" else day_chart(ov.live.day_chart),
        now=ov.live.now,
        problems=problems,
    )


# -- jobs --------------------------------------------------------------------


@router.get("/jobs")
def jobs_page(
    request: Request,
    identity: Viewer,
    queue: str = "",
    task: str = "",
    state: str = "",
    schedule: str = "",
    search: str = "",
    limit: str = "50",
    cursor: str = "",
) -> Response:
    """Filterable, keyset-paginated list of jobs."""
    filters = {"queue": queue, "task": task, "state": state, "schedule": schedule}
    filters["search"] = search
    parsed_state = parse_state(state) if state else None
    if not limit.isdigit() or int(limit) not in _PAGE_SIZES:
        raise InvalidArgument(f"page size must be one of {', '.join(map(str, _PAGE_SIZES))}")
    store = _store(request)
    page = _ops.list_jobs(
        store,
        queue=queue,
        task=task,
        state=parsed_state,
        schedule=schedule,
        search=search,
        limit=int(limit),
        cursor=cursor,
        masking=True,  # pages show a command's environment with its values hidden
    )
    kept = {k: v for k, v in filters.items() if v}
    if limit != "50":
        kept["limit"] = limit
    queue_names, task_names = _ops.known_names(store, context(request).app.tasks)
    f = dict(filters, state=parsed_state)
    return _render(
        request,
        "jobs.html",
        identity,
        page=page,
        f=f,
        limit=int(limit),
        cursor=cursor,
        first_query=kept,
        next_query=dict(kept, cursor=page.next_cursor or ""),
        queue_names=queue_names,
        task_names=task_names,
    )


@router.get("/jobs/{job_id}")
def job_page(request: Request, identity: Viewer, job_id: str) -> Response:
    """Everything about one job; the id may be a unique prefix of it."""
    store = _store(request)
    job = _ops.get_job(store, job_id)
    page = store.job_logs(job.id)
    logs = list(page)
    while len(page) == MAX_LOG_PAGE:  # the whole log, page by page: its cap bounds it
        page = store.job_logs(job.id, after=page[-1].seq)
        logs += page
    waiting = None  # why a queued job is not taken, if no worker may take it
    if job.state is JobState.QUEUED:
        waiting = job_problem(store, job)
    # a retry by hand counts attempts from 1 again: each run's output under its own heading
    headings = LogHeadings(job.history, context(request).templates.env.filters["when"])
    return _render(
        request,
        "job.html",
        identity,
        job=job,
        logs=logs,
        log_lines=headings.in_runs(logs),
        log_attempt=headings.latest_shown(),
        log_note=headings.requeue_note(),
        waiting=waiting,
    )


@router.post("/jobs/retry-failed")
async def retry_failed_action(request: Request, identity: Operator) -> Response:
    """Bulk retry of the failed jobs of a queue and/or task."""
    form = await request.form()
    queue, task = str(form.get("queue") or ""), str(form.get("task") or "")

    def run() -> str:
        if not queue and not task:  # a guard against a mass retry by accident
            raise InvalidArgument("bulk retry needs a queue or a task (or both)")
        by = _ops.actor(request, identity)
        n = _admin(request).retry_failed(queue or None, task or None, by=by)
        return f"Queued {n} failed jobs again."

    return await _act(request, run, "/jobs")


@router.post("/jobs/{job_id}/{verb}")
async def job_action(request: Request, identity: Operator, job_id: str, verb: str) -> Response:
    """Retry, cancel or delete one job."""
    admin = _admin(request)
    actions: dict[str, tuple[Callable[..., str], str]] = {
        "retry": (admin.retry_job, "queued again"),
        "cancel": (admin.cancel_job, "cancelled"),
        "delete": (admin.delete_job, "deleted"),
    }
    if verb not in actions:
        raise _ops.NotFound(f"no job action {verb!r}; use retry, cancel or delete")
    fn, done = actions[verb]

    def run() -> str:
        full = fn(job_id, by=_ops.actor(request, identity))
        if verb == "cancel":
            text = _ops.cancelled_text(context(request).app.store, full)
            return text[:1].upper() + text[1:] + "."
        return f"Job {full} {done}."

    return await _act(request, run, f"/jobs/{job_id}")


# -- queues and limits -------------------------------------------------------


@router.get("/queues")
def queues_page(request: Request, identity: Viewer) -> Response:
    """Queues with pause/resume/purge, and the limits in force."""
    store = _store(request)
    return _render(
        request, "queues.html", identity, queues=_ops.queues(store), limits=_ops.limits(store)
    )


@router.post("/queues/pause")
async def pause_ahead_action(request: Request, identity: Operator) -> Response:
    """Pause a queue by name, whether or not it has jobs yet."""
    name = str((await request.form()).get("name") or "")

    def run() -> str:
        _admin(request).pause_queue(name, by=_ops.actor(request, identity))
        return f"Queue {name} paused."

    return await _act(request, run, "/queues")


def _pending(request: Request, name: str) -> tuple[QueueInfo, int]:
    """Queue ``name`` and how many pending (scheduled or queued) jobs it
    has, read from the primary store: the purge they confirm works there."""
    queue = next((q for q in _ops.queues(context(request).app.store) if q.name == name), None)
    if queue is None:
        raise _ops.NotFound(f"queue {name!r} not found")
    return queue, sum(queue.counts.get(s, 0) for s in (JobState.SCHEDULED, JobState.QUEUED))


@router.get("/queues/{name:path}/purge")
def purge_page(request: Request, identity: Viewer, name: str) -> Response:
    """Ask before purging, saying how many jobs it deletes."""
    if identity.role < Role.OPERATOR:
        raise Forbidden("purging a queue needs the operator role")
    queue, pending = _pending(request, name)
    return _render(request, "purge.html", identity, queue=queue, pending=pending, changed="")


@router.post("/queues/{name:path}/purge")
async def purge_action(request: Request, identity: Operator, name: str) -> Response:
    """Purge the queue if it still has the number of pending jobs its
    confirmation showed (the form's ``pending``); if that changed, purge
    nothing and ask again with the new number (409). (Jobs sent in the
    moment between that count and the purge are purged with the rest.)"""
    form = await request.form()
    shown = str(form.get("pending") or "")
    if form.get("confirm") != name:
        flash(request, "error", "purge was not confirmed")
        return RedirectResponse("/queues", status_code=303)

    def run() -> tuple[QueueInfo, int, int | None]:
        queue, pending = _pending(request, name)
        if shown != str(pending):
            return queue, pending, None
        return queue, pending, _admin(request).purge_queue(name, by=_ops.actor(request, identity))

    try:
        queue, pending, purged = await run_in_threadpool(run)
    except (_ops.NotFound, InvalidArgument, errors.Forbidden) as exc:
        flash(request, "error", str(exc))
        return RedirectResponse("/queues", status_code=303)
    if purged is None:
        changed = _changed_text(name, pending, shown)
        values = {"queue": queue, "pending": pending, "changed": changed}
        return _render(request, "purge.html", identity, status=409, **values)
    flash(request, "ok", f"Purged {_pending_jobs(purged)} from queue {name}.")
    return RedirectResponse("/queues", status_code=303)


def _pending_jobs(count: int) -> str:
    """``1 pending job``, ``6 pending jobs``."""
    return f"{count} pending job{'' if count == 1 else 's'}"


def _changed_text(name: str, pending: int, shown: str) -> str:
    """Why a purge was asked again: the queue's pending count is not the one confirmed."""
    was = f", not {shown}" if shown.isdigit() else ""
    return (
        f"Queue {name} changed since you were asked: it has {_pending_jobs(pending)} now{was}."
        " Nothing was purged."
    )


@router.post("/queues/{name:path}/{verb}")
async def queue_action(request: Request, identity: Operator, name: str, verb: str) -> Response:
    """Pause a queue, resume it or set its mode."""
    form = await request.form()

    def run() -> str:
        admin, by = _admin(request), _ops.actor(request, identity)
        if verb == "pause":
            admin.pause_queue(name, by=by)
            return f"Queue {name} paused."
        if verb == "resume":
            admin.resume_queue(name, by=by)
            return f"Queue {name} resumed."
        if verb == "mode":
            mode = str(form.get("mode") or "")
            admin.set_queue_mode(name, mode, by=by)
            return f"Queue {name} set to {mode}."
        raise _ops.NotFound(f"no queue action {verb!r}; use pause, resume, mode or purge")

    return await _act(request, run, "/queues")


@router.post("/limits/{key:path}/{verb}")
async def limit_action(request: Request, identity: Operator, key: str, verb: str) -> Response:
    """Set or clear a run-time limit, or reset a breaker."""
    form = await request.form()
    raw = str(form.get("concurrency") or "").strip()

    def run() -> str:
        admin, by = _admin(request), _ops.actor(request, identity)
        if verb == "set":
            if not raw.isdigit():
                raise InvalidArgument(f"limit must be a non-negative integer, not {raw!r}")
            admin.set_limit(key, int(raw), by=by)
            return f"Limit of {key} set to {int(raw)}."
        if verb == "clear":
            admin.clear_limit(key, by=by)
            return f"Limit override of {key} cleared."
        if verb == "reset":
            if not admin.reset_breaker(key, by=by):
                return f"The breaker of {key} was not open; nothing changed."
            return f"Breaker of {key} reset."
        raise _ops.NotFound(f"no limit action {verb!r}; use set, clear or reset")

    return await _act(request, run, "/queues")


# -- schedules, workers, export ----------------------------------------------


def _json_text(value: Any) -> str:
    """``value`` as JSON text to show in a page, which escapes it for HTML
    (Jinja's ``tojson`` escapes quotes as ``\\u0027``: it is for scripts)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _details_text(details: Mapping[str, Any]) -> str:
    """An audit entry's details as ``key=JSON`` pairs, by key."""
    return " ".join(f"{key}={_json_text(value)}" for key, value in sorted(details.items()))


@router.get("/schedules")
def schedules_page(request: Request, identity: Viewer) -> Response:
    """Schedules with their triggers in words, next and last fire."""
    return _render(request, "schedules.html", identity, schedules=_ops.schedules(_store(request)))


@router.get("/schedules/{name:path}")
def schedule_page(request: Request, identity: Viewer, name: str) -> Response:
    """One schedule: its settings, its next fires and its latest runs, charted."""
    store = _store(request)
    view = _ops.schedule(store, name)
    runs = schedule_runs(store, name)
    now = store.now()
    options = [
        (key, _json_text(value))
        for key, value in sorted(view.job_options.items())
        if value not in (None, [], {}) and key not in ("retry", "max_attempts")
    ]
    return _render(
        request,
        "schedule.html",
        identity,
        now=now,
        s=view,
        options=options,
        runs=runs,
        runs_chart=runs_chart(runs.jobs, now),
        upcoming=upcoming_fires(view.trigger, view.next_fire, view.enabled),
    )


@router.post("/schedules/{name:path}/{verb}")
async def schedule_action(request: Request, identity: Operator, name: str, verb: str) -> Response:
    """Pause, resume, run now or remove a schedule."""

    def run() -> str:
        admin, by = _admin(request), _ops.actor(request, identity)
        if verb == "pause":
            admin.pause_schedule(name, by=by)
            return f"Schedule {name} paused."
        if verb == "resume":
            admin.resume_schedule(name, by=by)
            return f"Schedule {name} resumed."
        if verb == "run":
            return f"Schedule {name} sent job {admin.run_schedule_now(name, by=by)}."
        if verb == "remove":
            admin.remove_schedule(name, by=by)
            return f"Schedule {name} removed."
        raise _ops.NotFound(f"no schedule action {verb!r}; use pause, resume, run or remove")

    return await _act(request, run, "/schedules")


@router.get("/workers")
def workers_page(request: Request, identity: Viewer) -> Response:
    """Workers with load and heartbeat; lost ones marked."""
    return _render(
        request,
        "workers.html",
        identity,
        workers=_ops.workers(_store(request)),
        lost_after=_ops.LOST_AFTER,
    )


@router.get("/audit")
def audit_page(
    request: Request, identity: Viewer, actor: str = "", action: str = "", cursor: str = ""
) -> Response:
    """The audit log: who did what, when, through what and from where; newest first."""
    entries, next_cursor = _store(request).audit(
        limit=_AUDIT_PAGE, cursor=cursor or None, actor=actor or None, action=action or None
    )
    kept = {k: v for k, v in (("actor", actor), ("action", action)) if v}
    return _render(
        request,
        "audit.html",
        identity,
        rows=[(entry, _details_text(entry.details)) for entry in entries],
        f=kept,
        cursor=cursor,
        first_query=kept,
        next_query=dict(kept, cursor=next_cursor or ""),
        next_cursor=next_cursor,
    )


@router.get("/export")
def export_page(request: Request, identity: Viewer) -> Response:
    """The export form; the download itself is ``GET /api/export``."""
    queue_names, task_names = _ops.known_names(_store(request), context(request).app.tasks)
    return _render(
        request,
        "export.html",
        identity,
        queue_names=queue_names,
        task_names=task_names,
        columns=FIELDS,
    )
