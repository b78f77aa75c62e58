"""The REST API behind the dashboard's forms: send a job, create or change a
schedule. Operators only; every call goes to ``app.admin``.

Bad input answers 400 (``invalid_argument``, ``serialization_error``,
``invalid_schedule``) or 404 (``unknown_task``) with the same message the
forms show, and writes nothing. A value of the wrong JSON type is refused
in JSON's words (``_json_shapes``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Path, Request
from pydantic import BaseModel, ConfigDict, Field

from rota import _validate
from rota._validate import MAX_NAME_LENGTH
from rota.errors import NotFound
from rota.models import Schedule
from rota.web import _json_shapes as shapes
from rota.web import _ops
from rota.web._api import _errors
from rota.web._auth import Identity
from rota.web._deps import api_operator, context

__all__ = ["router"]

# Error answers documented as the rest of the API documents them.
router = APIRouter(prefix="/api", responses=_errors(400, 401, 403, 404, 422))
Operator = Annotated[Identity, Depends(api_operator)]
Name = Annotated[str, Path(min_length=1, max_length=MAX_NAME_LENGTH)]


class SendBody(BaseModel):
    """A job of a registered task: ``args`` (a JSON array), ``kwargs`` (a JSON
    object), task option overrides (``queue``, ``priority``, ``retries``, ...)
    and a ``delay`` in seconds or a duration such as ``"5m"``. The values are
    checked by ``app.admin.send``, as the dashboard's form is."""

    model_config = ConfigDict(extra="forbid")

    task: Any = Field(..., examples=["crawl.fetch"])
    args: Any = Field(default_factory=list, examples=[["https://example.com/"]])
    kwargs: Any = None
    options: Any = Field(None, examples=[{"queue": "slow", "priority": 5}])
    delay: Any = Field(None, examples=[30, "5m"])


class Sent(BaseModel):
    """The job sent (or the pending one with the same unique key)."""

    ok: bool = True
    message: str
    job_id: str
    duplicate: bool


class ScheduleChanges(BaseModel):
    """Fields of a schedule; those left out keep their values. ``trigger`` is
    ``{"type": "every", "interval": 60}``, ``{"type": "cron", "expr": "*/5 * *
    * *", "tz": "UTC"}`` or ``{"type": "at", "time": EPOCH_SECONDS}``. The
    values are checked by ``app.admin``, as the dashboard's form is."""

    model_config = ConfigDict(extra="forbid")

    task: Any = None
    trigger: Any = None
    args: Any = None
    kwargs: Any = None
    jitter: Any = None
    misfire: Any = None
    grace: Any = None
    overlap: Any = None
    enabled: Any = None
    options: Any = None


class NewSchedule(ScheduleChanges):
    """A schedule of a registered task (replaces one of the same name)."""

    name: Any = Field(..., examples=["nightly"])
    task: Any = Field(..., examples=["reports.build"])
    trigger: Any = Field(..., examples=[{"type": "every", "interval": 60}])


class Saved(BaseModel):
    """The schedule as stored."""

    ok: bool = True
    message: str
    name: str
    next_fire: float | None
    enabled: bool


def _saved(schedule: Schedule, verb: str) -> Saved:
    return Saved(
        message=f"schedule {schedule.name!r} {verb}",
        name=schedule.name,
        next_fire=schedule.next_fire,
        enabled=schedule.enabled,
    )


@router.post("/jobs", status_code=201, summary="Send a job of a registered task")
def send_job(request: Request, identity: Operator, body: Annotated[SendBody, Body()]) -> Sent:
    """Validated as ``Task.send``: JSON arguments only (no NaN or infinity),
    option bounds, payload size. 404 for a task the app does not register."""
    shapes.check(body.model_dump(include={"args", "kwargs", "options"}))
    handle = context(request).app.admin.send(
        body.task,
        body.args,
        body.kwargs,
        options=body.options,
        delay=body.delay,
        by=_ops.actor(request, identity),
    )
    if handle.duplicate:
        message = f"job {handle.id} with the same unique key is pending"
    else:
        message = f"sent job {handle.id}"
    return Sent(message=message, job_id=handle.id, duplicate=handle.duplicate)


@router.post("/schedules", status_code=201, summary="Create or replace a schedule")
def add_schedule(
    request: Request, identity: Operator, body: Annotated[NewSchedule, Body()]
) -> Saved:
    """The schedule's next fire is its trigger's first fire from now; redefining
    a schedule with the same trigger keeps its timing."""
    fields = body.model_dump(exclude_unset=True, exclude={"name", "task", "trigger"})
    name = _validate.name(body.name, "schedule name")
    shapes.check({"trigger": body.trigger, **fields}, where=f"schedule {name!r}")
    stored = context(request).app.admin.add_schedule(
        body.name, body.task, body.trigger, by=_ops.actor(request, identity), **fields
    )
    return _saved(stored, "saved")


@router.patch("/schedules/{name:path}", summary="Change some fields of a schedule")
def update_schedule(
    request: Request, identity: Operator, name: Name, body: Annotated[ScheduleChanges, Body()]
) -> Saved:
    """Only the fields given change (``"grace": null`` removes the grace time).
    With no field given the schedule is unchanged: nothing is written or
    audited, as when the dashboard's form is saved unchanged."""
    changes = body.model_dump(exclude_unset=True)
    stored = _stored(request, name)  # a bad name, then an unknown one, before the fields
    if not changes:
        return _saved(stored, "is unchanged")
    shapes.check(changes, where=f"schedule {name!r}")
    stored = context(request).app.admin.update_schedule(
        name, by=_ops.actor(request, identity), **changes
    )
    return _saved(stored, "updated")


def _stored(request: Request, name: str) -> Schedule:
    """Schedule ``name`` as the primary store holds it (:class:`NotFound` if none)."""
    found = context(request).app.store.get_schedule(_validate.name(name, "schedule name"))
    if found is None:
        raise NotFound(f"schedule {name!r} not found")
    return found
