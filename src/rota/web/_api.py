"""The REST API under ``/api/``: everything the pages do, as JSON.

Times are seconds since the epoch on the store's clock. Errors are JSON
objects ``{"error": code, "detail": message}`` (see ``_errors``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, Path, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field, StrictFloat, StrictInt, StrictStr

from rota._validate import MAX_LIMIT, MAX_NAME_LENGTH
from rota.admin import Admin
from rota.errors import InvalidArgument
from rota.models import AuditEntry, JobPage, JobState, QueueInfo
from rota.stores.base import Store
from rota.web import _ops
from rota.web._auth import Identity, Role
from rota.web._deps import api_operator, api_viewer, context
from rota.web._export import ExportFormat, export_chunks, export_filename

__all__ = ["router"]


class ErrorBody(BaseModel):
    """Every error answer: a stable code and a message saying what to fix."""

    error: str = Field(..., examples=["not_found"])
    detail: str = Field(..., examples=["job 'abc' not found"])


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    reasons = {
        400: "A value was rejected (bad cursor, missing filter).",
        401: "No valid credentials.",
        403: "The role does not allow it, or a CSRF token is missing.",
        404: "No such job, queue, schedule or limit key.",
        409: "The action does not apply in the object's current state.",
        422: "The request is malformed (bad state, page size, body).",
    }
    return {s: {"model": ErrorBody, "description": reasons[s]} for s in statuses}


router = APIRouter(prefix="/api", responses=_errors(400, 401, 403, 404, 422))
read = APIRouter(dependencies=[Depends(api_viewer)])
act = APIRouter(dependencies=[Depends(api_operator)], responses=_errors(409))

Name = Annotated[str, Path(min_length=1, max_length=MAX_NAME_LENGTH)]
OptionalName = Annotated[str | None, Query(max_length=MAX_NAME_LENGTH)]


class Done(BaseModel):
    """An action that applied."""

    ok: bool = True
    message: str


class Counted(Done):
    """An action that applied to ``count`` jobs."""

    count: int


class BreakerReset(Done):
    """A breaker reset: ``was_open`` False when the breaker was closed
    already (nothing changed; not an error)."""

    was_open: bool


class Enqueued(Done):
    """A job sent by "run now"."""

    job_id: str
    duplicate: bool


class Me(BaseModel):
    """The caller's role."""

    role: str


class RetryFailedBody(BaseModel):
    """Which failed jobs to retry: those of a queue, of a task, or both."""

    queue: StrictStr | None = Field(None, max_length=MAX_NAME_LENGTH)
    task: StrictStr | None = Field(None, max_length=MAX_NAME_LENGTH)


class ModeBody(BaseModel):
    """A queue mode: ``running``, ``paused`` or ``debug`` (pauses itself at its
    first failed job)."""

    mode: Literal["running", "paused", "debug"]


class AuditPage(BaseModel):
    """Audit entries, newest first; pass ``next_cursor`` back as ``cursor``."""

    entries: list[AuditEntry]
    next_cursor: str | None


class LimitBody(BaseModel):
    """A run-time concurrency limit from 0 to 1,000,000 (a JSON integer, not a
    boolean or a float); null clears the override."""

    concurrency: StrictInt | None = Field(..., ge=0, le=MAX_LIMIT)


class RateBody(BaseModel):
    """A run-time rate: ``"2/s"``, ``"100/m"``, ``"5/10s"`` or a number of
    jobs a second above 0; null goes back to the rate the jobs carry."""

    rate: StrictStr | StrictFloat | StrictInt | None = Field(...)


def _store(request: Request) -> Store:
    return context(request).store


def _admin(request: Request) -> Admin:
    return context(request).app.admin


Acting = Annotated[Identity, Depends(api_operator)]
Reading = Annotated[Identity, Depends(api_viewer)]


def _for(identity: Identity, item: _ops.Shown) -> _ops.Shown:
    """A job or schedule as ``identity`` reads it: whole for an operator or
    an admin, who may need a command's environment to redefine it; with the
    values of that environment hidden for a viewer (see :func:`_ops.masked`)."""
    return item if identity.role >= Role.OPERATOR else _ops.masked(item)


# -- who am I, stats ---------------------------------------------------------


@read.get("/me", response_model=Me, summary="The caller's role")
def me(identity: Annotated[Identity, Depends(api_viewer)]) -> Me:
    """``viewer`` or ``operator``."""
    return Me(role=identity.role.label)


@read.get("/stats", summary="Overview: queues, throughput windows, chart, workers")
def stats(request: Request) -> _ops.Overview:
    """Per queue counts by state; throughput over 5 min, 1 h, 1 day and all time;
    the charts' series (the last hour per minute, the last day per half hour);
    workers online and lost."""
    return _ops.overview(_store(request))


@read.get("/stats/live", summary="Throughput windows, chart and workers (cheap; polled)")
def stats_live(request: Request) -> _ops.Live:
    """The part of the overview the dashboard polls every 2 s."""
    return _ops.live(_store(request))


# -- queues -------------------------------------------------------------------


@read.get("/queues", summary="Queues with counts by state")
def list_queues(request: Request) -> list[QueueInfo]:
    """Every queue that has jobs or is paused."""
    return _ops.queues(_store(request))


@act.post("/queues/{name:path}/pause", summary="Pause a queue")
def pause_queue(request: Request, name: Name, identity: Acting) -> Done:
    """Workers stop claiming from the queue; it keeps accepting jobs."""
    _admin(request).pause_queue(name, by=_ops.actor(request, identity))
    return Done(message=f"queue {name!r} paused")


@act.post("/queues/{name:path}/resume", summary="Resume a queue")
def resume_queue(request: Request, name: Name, identity: Acting) -> Done:
    """Workers claim from the queue again."""
    _admin(request).resume_queue(name, by=_ops.actor(request, identity))
    return Done(message=f"queue {name!r} resumed")


@act.post("/queues/{name:path}/purge", summary="Delete every pending job of a queue")
def purge_queue(request: Request, name: Name, identity: Acting) -> Counted:
    """Scheduled and queued jobs are deleted; running and finished jobs stay."""
    n = _admin(request).purge_queue(name, by=_ops.actor(request, identity))
    return Counted(message=f"purged {n} pending jobs from queue {name!r}", count=n)


@act.post("/queues/{name:path}/mode", summary="Set a queue's mode")
def set_queue_mode(
    request: Request, name: Name, body: Annotated[ModeBody, Body()], identity: Acting
) -> Done:
    """``running``, ``paused``, or ``debug``: the queue runs and pauses itself
    at its first failed job."""
    _admin(request).set_queue_mode(name, body.mode, by=_ops.actor(request, identity))
    return Done(message=f"queue {name!r} set to {body.mode}")


# -- jobs ---------------------------------------------------------------------


@read.get("/jobs", summary="List jobs, newest first (keyset pagination)")
def list_jobs(
    request: Request,
    queue: OptionalName = None,
    task: OptionalName = None,
    state: JobState | None = None,
    schedule: OptionalName = None,
    search: Annotated[
        str | None, Query(max_length=200, description="Text to find in the arguments' JSON")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=1000, description="Page size")] = 50,
    cursor: Annotated[
        str | None, Query(max_length=100, description="next_cursor of the previous page")
    ] = None,
    *,
    identity: Reading,
) -> JobPage:
    """Filter by queue, task, state, schedule and a text search over the arguments.
    Pass ``next_cursor`` back as ``cursor`` for the next page; the end is a
    null ``next_cursor``: a page may be empty and still have one (a store may
    scan only so many jobs per page), so read on. A viewer reads
    the ``env`` of a command job with its values hidden (``"***"``)."""
    page = _ops.list_jobs(
        _store(request),
        queue=queue,
        task=task,
        state=state,
        schedule=schedule,
        search=search,
        limit=limit,
        cursor=cursor,
        masking=identity.role < Role.OPERATOR,
    )
    return JobPage(tuple(_for(identity, job) for job in page.jobs), page.next_cursor)


@act.post("/jobs/retry-failed", summary="Retry every failed job of a queue and/or task")
def retry_failed(
    request: Request, body: Annotated[RetryFailedBody, Body()], identity: Acting
) -> Counted:
    """At least one of ``queue`` and ``task`` is required."""
    if not body.queue and not body.task:  # a guard against a mass retry by accident
        raise InvalidArgument("bulk retry needs a queue or a task (or both)")
    by = _ops.actor(request, identity)
    n = _admin(request).retry_failed(body.queue or None, body.task or None, by=by)
    return Counted(message=f"retried {n} failed jobs", count=n)


@read.get("/jobs/{job_id}", summary="One job with arguments, result, error and history")
def get_job(request: Request, job_id: Name, identity: Reading) -> _ops.JobView:
    """Everything the store knows about the job, including lost attempts. The
    id may be a unique prefix of six or more characters (409 when several
    jobs match). A succeeded job has no error: the errors of its earlier
    attempts are in its history. ``retry`` is the job's retry policy:
    ``backoff`` as [base, max] seconds, the errors it is limited to
    (``retry_on``, null for any) and those it never retries (``no_retry_on``).
    A viewer reads the ``env`` of a command job with its values hidden."""
    job = _ops.current_error_only(_ops.get_job(_store(request), job_id))
    return _for(identity, _ops.job_view(job))


@act.post("/jobs/{job_id}/retry", summary="Retry a failed or cancelled job")
def retry_job(request: Request, job_id: Name, identity: Acting) -> Done:
    """The job is queued again with fresh attempt counts."""
    full = _admin(request).retry_job(job_id, by=_ops.actor(request, identity))
    return Done(message=f"job {full} queued again")


@act.post("/jobs/{job_id}/cancel", summary="Cancel a job, or stop a running one")
def cancel_job(request: Request, job_id: Name, identity: Acting) -> Done:
    """A pending job is cancelled at once; a running one is asked to stop by
    its worker within about a second (a thread task stops when it checks
    ``cancelled``). Finished jobs cannot be cancelled (409)."""
    full = _admin(request).cancel_job(job_id, by=_ops.actor(request, identity))
    return Done(message=_ops.cancelled_text(context(request).app.store, full))


@act.delete("/jobs/{job_id}", summary="Delete a job that is not running")
def delete_job(request: Request, job_id: Name, identity: Acting) -> Done:
    """Running jobs cannot be deleted (409)."""
    full = _admin(request).delete_job(job_id, by=_ops.actor(request, identity))
    return Done(message=f"job {full} deleted")


# -- schedules ----------------------------------------------------------------


@read.get("/schedules", summary="Schedules with their triggers in words")
def list_schedules(request: Request, identity: Reading) -> list[_ops.ScheduleView]:
    """Name, task, trigger, next and last fire, and the last job's state. A
    viewer reads the ``env`` of a command schedule with its values hidden."""
    return [_for(identity, view) for view in _ops.schedules(_store(request))]


@read.get("/schedules/{name:path}", summary="One schedule")
def get_schedule(request: Request, name: Name, identity: Reading) -> _ops.ScheduleView:
    """As in the list; 404 for a name no schedule has."""
    return _for(identity, _ops.schedule(_store(request), name))


@act.post("/schedules/{name:path}/pause", summary="Pause a schedule")
def pause_schedule(request: Request, name: Name, identity: Acting) -> Done:
    """The schedule stops firing until resumed."""
    _admin(request).pause_schedule(name, by=_ops.actor(request, identity))
    return Done(message=f"schedule {name!r} paused")


@act.post("/schedules/{name:path}/resume", summary="Resume a schedule")
def resume_schedule(request: Request, name: Name, identity: Acting) -> Done:
    """The schedule fires again from its next fire time."""
    _admin(request).resume_schedule(name, by=_ops.actor(request, identity))
    return Done(message=f"schedule {name!r} resumed")


@act.post("/schedules/{name:path}/run", summary="Run a schedule's job now")
def run_schedule(request: Request, name: Name, identity: Acting) -> Enqueued:
    """Enqueue one job of the schedule's task with its arguments; the schedule's
    own timing is unchanged."""
    primary = context(request).app.store  # the job just sent may not be on a replica yet
    start = primary.now()
    job_id = _admin(request).run_schedule_now(name, by=_ops.actor(request, identity))
    job = primary.get_job(job_id)
    duplicate = job is not None and job.enqueued_at < start  # it was there before
    message = f"schedule {name!r} sent job {job_id}"
    if duplicate:
        message = f"schedule {name!r}: job {job_id} with the same unique key is pending"
    return Enqueued(message=message, job_id=job_id, duplicate=duplicate)


@act.delete("/schedules/{name:path}", summary="Remove a schedule")
def remove_schedule(request: Request, name: Name, identity: Acting) -> Done:
    """Jobs the schedule already sent stay."""
    _admin(request).remove_schedule(name, by=_ops.actor(request, identity))
    return Done(message=f"schedule {name!r} removed")


# -- workers and limits -------------------------------------------------------


@read.get("/workers", summary="Workers with load and last heartbeat")
def list_workers(request: Request) -> list[_ops.WorkerView]:
    """Workers whose heartbeat is older than 30 s are marked ``lost``."""
    return _ops.workers(_store(request))


@read.get("/limits", summary="Flow-control keys: running/limit, rate, tokens, breakers")
def list_limits(request: Request) -> list[_ops.LimitView]:
    """Every key the store knows, with its current state."""
    return _ops.limits(_store(request))


@act.put("/limits/{key:path}/rate", summary="Override a key's rate")
def set_rate(
    request: Request, key: Name, body: Annotated[RateBody, Body()], identity: Acting
) -> Done:
    """Cluster-wide, at once, in place of the rate the key's jobs carry (their
    burst stays); ``null`` goes back to theirs."""
    _admin(request).set_rate(key, body.rate, by=_ops.actor(request, identity))
    if body.rate is None:
        return Done(message=f"rate override of {key!r} cleared")
    return Done(message=f"rate of {key!r} set to {body.rate}")


@act.put("/limits/{key:path}", summary="Override a key's concurrency limit")
def set_limit(
    request: Request, key: Name, body: Annotated[LimitBody, Body()], identity: Acting
) -> Done:
    """Cluster-wide, at once; ``null`` goes back to the limit the tasks declare."""
    _admin(request).set_limit(key, body.concurrency, by=_ops.actor(request, identity))
    if body.concurrency is None:
        return Done(message=f"limit override of {key!r} cleared")
    return Done(message=f"limit of {key!r} set to {body.concurrency}")


@act.delete("/limits/{key:path}", summary="Clear a key's run-time limit override")
def clear_limit(request: Request, key: Name, identity: Acting) -> Done:
    """Back to the limit the tasks declare."""
    _admin(request).clear_limit(key, by=_ops.actor(request, identity))
    return Done(message=f"limit override of {key!r} cleared")


@act.post("/limits/{key:path}/reset", summary="Close a key's circuit breaker if it is open")
def reset_breaker(request: Request, key: Name, identity: Acting) -> BreakerReset:
    """``was_open`` says whether it was open; a breaker not open is left as it
    is (200, nothing recorded). 404 for a key the store does not know."""
    if not _admin(request).reset_breaker(key, by=_ops.actor(request, identity)):
        message = f"the breaker of {key!r} was not open; nothing changed"
        return BreakerReset(message=message, was_open=False)
    return BreakerReset(message=f"breaker of {key!r} reset", was_open=True)


# -- audit --------------------------------------------------------------------


@read.get("/audit", summary="The audit log of operator actions, newest first")
def audit(
    request: Request,
    actor: OptionalName = None,
    action: OptionalName = None,
    limit: Annotated[int, Query(ge=1, le=1000, description="Page size")] = 100,
    cursor: Annotated[
        str | None, Query(max_length=200, description="next_cursor of the previous page")
    ] = None,
) -> AuditPage:
    """Who did what, when, through what (python, cli, web, api) and from where;
    filtered by ``actor`` and ``action`` (e.g. ``queue.pause``)."""
    entries, next_cursor = _store(request).audit(
        limit=limit, cursor=cursor or None, actor=actor or None, action=action or None
    )
    return AuditPage(entries=entries, next_cursor=next_cursor)


# -- export -------------------------------------------------------------------


@read.get(
    "/export",
    summary="Download results as JSON Lines, a JSON array or CSV (streamed)",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {"text/csv": {}, "application/x-ndjson": {}, "application/json": {}},
            "description": "One row per succeeded job: id, task, queue, args, kwargs, "
            "result, attempt, enqueued_at, started_at, finished_at, schedule.",
        }
    },
)
def export(
    request: Request,
    identity: Reading,
    format: ExportFormat = ExportFormat.JSONL,
    queue: OptionalName = None,
    task: OptionalName = None,
) -> StreamingResponse:
    """Every succeeded job of a queue and/or task (all when neither is given);
    for a viewer, the values of a command job's ``env`` are hidden."""
    hidden = identity.role < Role.OPERATOR
    chunks = export_chunks(_store(request), format, queue, task, masked=hidden)
    filename = export_filename(format, queue, task)
    return StreamingResponse(
        chunks,
        media_type=format.media_type,
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


router.include_router(read)
router.include_router(act)
