"""The dashboard's forms that create things: send a job, create or edit a
schedule. Operators only.

Each form is parsed by ``_form_parse`` and handed to ``app.admin``, the same
call the REST API makes (``_forms_api``), so both refuse the same input with
the same message. A refused form is shown again with the message beside the
field (status 400) and nothing written; a good one redirects (303).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException

from rota import _json
from rota._time import shown_utc
from rota.commands import command_line
from rota.errors import (
    InvalidArgument,
    InvalidSchedule,
    NotFound,
    PayloadTooLarge,
    SerializationError,
    UnknownTask,
)
from rota.models import Schedule
from rota.scheduling.define import OVERLAP_POLICIES
from rota.scheduling.triggers import MISFIRE_POLICIES, Trigger
from rota.web import _form_parse as parse
from rota.web import _forms_api, _ops
from rota.web._auth import Forbidden, Identity, Role
from rota.web._deps import context, page_operator, page_viewer
from rota.web._pages import flash

__all__ = ["router"]

#: The form pages (hidden from the API schema) and the API behind them.
router = APIRouter()
pages = APIRouter(include_in_schema=False)

Viewer = Annotated[Identity, Depends(page_viewer)]
T = TypeVar("T")

#: Errors that mean "this input is refused": shown beside the form's fields.
REFUSED = (
    parse.FieldError,
    InvalidArgument,
    InvalidSchedule,
    SerializationError,
    PayloadTooLarge,
    UnknownTask,
)
SEND_FIELDS = ("task", "command", "cmd_timeout", "args", "kwargs", "delay", *parse.OPTION_FIELDS)
SCHEDULE_FIELDS = (
    *("name", "task", "command", "cmd_timeout", "kind", "interval", "cron", "tz", "at"),
    *("args", "kwargs"),
    *("jitter", "misfire", "grace", "overlap", "enabled", *parse.OPTION_FIELDS),
)


#: How many times the app's payload cap a form field may take as sent:
#: percent-encoding takes up to three bytes for one, so a field whose text
#: fits the cap is read, and rota's own check of the payload answers for it.
FIELD_ROOM = 3
#: The fields that carry a job's arguments, where a payload over the cap is said.
ARGUMENT_FIELDS = ("args", "kwargs", "command")


def _operator_page(identity: Identity) -> None:
    if identity.role < Role.OPERATOR:
        raise Forbidden("this form needs the operator role")


@dataclass(frozen=True)
class Submitted:
    """A form an operator posted, or (``form`` None) why it could not be read."""

    identity: Identity
    form: FormData | None
    refused: str = ""


async def _submitted(request: Request) -> Submitted:
    """The posted form, read with room for fields as large as a job's payload
    (Starlette's parser stops at 1 MiB unless told), and checked as every
    page form is (operator role, CSRF token). A form with a field too large
    even for that is not read; the caller shows its page again, saying so."""
    cap = context(request).app.payload_cap
    try:
        form = await request.form(max_part_size=FIELD_ROOM * cap)
    except HTTPException as exc:  # a field over that, or more fields than any form has
        identity = context(request).auth.identify(request)
        _operator_page(identity)
        refused = (
            f"The form was not read, so nothing was saved: {str(exc.detail).rstrip('.')}"
            f" (a job's arguments may take up to {cap} bytes, the app's payload cap)."
        )
        return Submitted(identity, None, refused)
    return Submitted(await page_operator(request), form)  # it reads the form read here


Posted = Annotated[Submitted, Depends(_submitted)]


def _render(
    request: Request, name: str, identity: Identity, status: int = 200, **values: Any
) -> Response:
    ctx = context(request)
    values.update(
        identity=identity,
        can_act=True,
        now=ctx.store.now(),
        tasks=sorted(ctx.app.tasks),
        errors=values.get("errors", {}),
    )
    return ctx.templates.TemplateResponse(request, name, values, status_code=status)


async def _attempt(
    action: Callable[[], T], form: Mapping[str, Any], fields: tuple[str, ...]
) -> tuple[T | None, dict[str, str]]:
    """Run ``action`` in a thread; a refusal becomes ``{field: message}``
    (with every field refused when the form's own syntax is, and a payload
    over the cap beside the largest of the fields that carry it)."""
    try:
        return await run_in_threadpool(action), {}
    except parse.FieldErrors as exc:
        return None, exc.errors
    except PayloadTooLarge as exc:
        largest = max(ARGUMENT_FIELDS, key=lambda name: len(parse.text(form, name)))
        return None, {largest: str(exc)}
    except REFUSED as exc:
        return None, {parse.field_of(exc, fields): str(exc)}


def _form_values(form: Mapping[str, Any], fields: tuple[str, ...]) -> dict[str, str]:
    return {name: parse.text(form, name) for name in fields}


# -- send a job --------------------------------------------------------------------


def _new_send(task: str = "") -> dict[str, str]:
    """The send form's fields before anything is typed."""
    return dict.fromkeys(SEND_FIELDS, "") | {"task": task, "args": "[]", "kwargs": "{}"}


@pages.get("/send")
def send_page(request: Request, identity: Viewer, task: str = "") -> Response:
    """The form that sends a job of a registered task."""
    _operator_page(identity)
    return _render(request, "send.html", identity, values=_new_send(task))


@pages.post("/send")
async def send_action(request: Request, posted: Posted) -> Response:
    """Send the job; on success go to its page."""
    identity, form = posted.identity, posted.form
    if form is None:
        errors = {"": posted.refused}
        return _render(request, "send.html", identity, 413, values=_new_send(), errors=errors)
    admin = context(request).app.admin
    by = _ops.actor(request, identity)

    def send() -> tuple[str, bool]:
        read = parse.read_all(
            {
                "call": lambda: parse.call(form),
                "kwargs": lambda: parse.call_kwargs(form),
            }
        )
        task, args = read["call"]
        handle = admin.send(
            task,
            args,
            read["kwargs"],
            options=parse.options(form) or None,
            delay=parse.seconds(form, "delay"),
            by=by,
        )
        return handle.id, handle.duplicate

    sent, errors = await _attempt(send, form, SEND_FIELDS)
    if sent is None:
        values = _form_values(form, SEND_FIELDS)
        return _render(request, "send.html", identity, 400, values=values, errors=errors)
    job_id, duplicate = sent
    if duplicate:
        flash(request, "ok", f"A job with the same unique key is pending: {job_id}.")
    else:
        flash(request, "ok", f"Sent job {job_id}.")
    return RedirectResponse(f"/jobs/{job_id}", status_code=303)


# -- schedules -----------------------------------------------------------------------


def _plain(seconds: float) -> str:
    """Seconds as a person types them: ``60``, ``0.5``."""
    return str(int(seconds)) if float(seconds).is_integer() else str(seconds)


def _stored_at(at_time: object) -> str:
    """An ``at`` trigger's stored time for the form: ISO 8601, or the stored
    value as it is when no date can show it."""
    if not isinstance(at_time, int | float):
        return "" if at_time is None else str(at_time)
    moment = shown_utc(at_time)
    return str(at_time) if moment is None else moment.isoformat()


def _stored_form(schedule: Schedule) -> dict[str, str]:
    """A stored schedule as the edit form shows it."""
    trigger, opts = schedule.trigger, schedule.job_options
    payload = _json.loads(schedule.payload) or {}
    kind = str(trigger.get("type", ""))
    at_time = trigger.get("time") if kind == "at" else None
    retries = max(0, int(opts.get("max_attempts") or 1) - 1)
    command = command_line(schedule)  # shown as a line, not as args
    kwargs = payload.get("kwargs", {})
    cmd_timeout = kwargs.get("timeout") if command and isinstance(kwargs, dict) else None
    if isinstance(cmd_timeout, int | float) and not isinstance(cmd_timeout, bool):
        kwargs = {k: v for k, v in kwargs.items() if k != "timeout"}  # in a field of its own
    else:
        cmd_timeout = None
    return {
        "name": schedule.name,
        "task": schedule.task,
        "command": command,
        "cmd_timeout": "" if cmd_timeout is None else _plain(cmd_timeout),
        "kind": kind,
        "interval": _plain(trigger["interval"]) if kind == "every" else "",
        "cron": str(trigger.get("expr", "")) if kind == "cron" else "",
        "tz": str(trigger.get("tz", "UTC")) if kind == "cron" else "UTC",
        "at": _stored_at(at_time),
        "args": _json.dumps([] if command else payload.get("args", [])).decode(),
        "kwargs": _json.dumps(kwargs).decode(),
        "jitter": _plain(schedule.jitter),
        "misfire": schedule.misfire,
        "grace": "" if schedule.grace is None else _plain(schedule.grace),
        "overlap": schedule.overlap,
        "enabled": "on" if schedule.enabled else "",
        "queue": str(opts.get("queue") or ""),
        "priority": str(opts.get("priority") or 0),
        "retries": str(retries),
        "host": str(opts.get("host") or ""),
    }


_NEW_SCHEDULE = dict.fromkeys(SCHEDULE_FIELDS, "") | {
    "kind": "every",
    "interval": "60",
    "tz": "UTC",
    "args": "[]",
    "kwargs": "{}",
    "jitter": "0",
    "misfire": "coalesce",
    "overlap": "allow",
    "enabled": "on",
}


def _schedule_fields(form: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``app.admin.add_schedule`` the form gives
    (:class:`parse.FieldErrors` with every field whose text cannot be read)."""
    read = parse.read_all(
        {
            "call": lambda: parse.call(form),
            "trigger": lambda: parse.trigger(form),
            "kwargs": lambda: parse.call_kwargs(form),
        }
    )
    task, args = read["call"]
    return {
        "task": task,
        "trigger": read["trigger"],
        "args": args,
        "kwargs": read["kwargs"],
        "jitter": parse.seconds(form, "jitter") or 0.0,
        "misfire": parse.text(form, "misfire"),
        "grace": parse.seconds(form, "grace"),
        "overlap": parse.text(form, "overlap"),
        "enabled": parse.text(form, "enabled") == "on",
        "options": parse.options(form),
    }


def _changes(fields: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    """The fields that differ from the stored schedule's (as its form showed them)."""
    changed = {}
    for key, value in fields.items():
        old = before[key]
        if isinstance(value, Trigger):
            value, old = value.to_json(), old.to_json()
        if value != old:
            changed[key] = fields[key]
    return changed


def _schedule_page(
    request: Request,
    identity: Identity,
    values: dict[str, str],
    *,
    editing: bool,
    status: int = 200,
    errors: dict[str, str] | None = None,
) -> Response:
    """The schedule form, with the next fire times of the trigger it shows."""
    fires: list[float] = []
    if not errors:
        try:
            fires = parse.next_fires(parse.trigger(values), context(request).store.now())
        except REFUSED as exc:
            errors = {parse.field_of(exc, SCHEDULE_FIELDS): str(exc)}
            status = 400
    return _render(
        request,
        "schedule_form.html",
        identity,
        status,
        values=values,
        editing=editing,
        fires=fires,
        errors=errors or {},
        kinds=parse.TRIGGER_KINDS,
        misfires=MISFIRE_POLICIES,
        overlaps=OVERLAP_POLICIES,
    )


@pages.get("/schedules/new")
def new_schedule_page(request: Request, identity: Viewer, task: str = "") -> Response:
    """The form that creates a schedule of a registered task."""
    _operator_page(identity)
    return _schedule_page(request, identity, _NEW_SCHEDULE | {"task": task}, editing=False)


@pages.post("/schedules/new")
async def new_schedule_action(request: Request, posted: Posted) -> Response:
    """Preview the next fires (``intent=preview``) or create the schedule."""
    identity, form = posted.identity, posted.form
    if form is None:
        errors = {"": posted.refused}
        return _schedule_page(
            request, identity, _NEW_SCHEDULE, editing=False, status=413, errors=errors
        )
    values = _form_values(form, SCHEDULE_FIELDS)
    if parse.text(form, "intent") == "preview":
        return _schedule_page(request, identity, values, editing=False)
    admin = context(request).app.admin
    by = _ops.actor(request, identity)

    def add() -> Schedule:
        name = parse.text(form, "name")
        if name and context(request).app.store.get_schedule(name) is not None:
            raise parse.FieldError(
                "name", f"a schedule named {name!r} exists: edit it, or pick another name"
            )
        fields = _schedule_fields(form)
        return admin.add_schedule(name, by=by, **fields)

    stored, errors = await _attempt(add, form, SCHEDULE_FIELDS)
    if stored is None:
        return _schedule_page(request, identity, values, editing=False, status=400, errors=errors)
    flash(request, "ok", f"Schedule {stored.name} created.")
    return RedirectResponse("/schedules", status_code=303)


def _existing(request: Request, name: str, *, primary: bool = False) -> Schedule:
    ctx = context(request)
    found = (ctx.app.store if primary else ctx.store).get_schedule(name)
    if found is None:
        raise NotFound(f"schedule {name!r} not found")
    return found


@pages.get("/schedules/{name:path}/edit")
def edit_schedule_page(request: Request, identity: Viewer, name: str) -> Response:
    """The form that edits a schedule, filled with its stored values."""
    _operator_page(identity)
    values = _stored_form(_existing(request, name))
    return _schedule_page(request, identity, values, editing=True)


@pages.post("/schedules/{name:path}/edit")
async def edit_schedule_action(request: Request, posted: Posted, name: str) -> Response:
    """Preview the next fires (``intent=preview``) or save the changed fields."""
    identity, form = posted.identity, posted.form
    if form is None:
        stored = _stored_form(_existing(request, name))
        errors = {"": posted.refused}
        return _schedule_page(request, identity, stored, editing=True, status=413, errors=errors)
    values = _form_values(form, SCHEDULE_FIELDS) | {"name": name}
    if parse.text(form, "intent") == "preview":
        return _schedule_page(request, identity, values, editing=True)
    admin = context(request).app.admin
    by = _ops.actor(request, identity)

    def update() -> list[str]:
        # Compared with the form as it was shown: a field left alone is not a change.
        before = _schedule_fields(_stored_form(_existing(request, name, primary=True)))
        changes = _changes(_schedule_fields(form), before)
        if "options" in changes:  # a Host left blank: any host, not the stored one
            changes["options"].setdefault("host", None)
        if changes:
            admin.update_schedule(name, by=by, **changes)
        return sorted(changes)

    changed, errors = await _attempt(update, form, SCHEDULE_FIELDS)
    if changed is None:
        return _schedule_page(request, identity, values, editing=True, status=400, errors=errors)
    if changed:
        flash(request, "ok", f"Schedule {name} saved ({', '.join(changed)} changed).")
    else:
        flash(request, "ok", f"Schedule {name} is unchanged.")
    return RedirectResponse("/schedules", status_code=303)


router.include_router(pages)
router.include_router(_forms_api.router)
