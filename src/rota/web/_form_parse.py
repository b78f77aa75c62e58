"""From the text of the dashboard's forms to the values ``app.admin`` takes.

Only the form's own syntax is handled here (JSON text, numbers typed as
text, the trigger's fields); every rule about the values themselves is left
to ``app.admin``, so a form and the REST API refuse the same input with the
same message. A value that fails here raises :class:`FieldError`, naming the
field to show the message beside.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any

from rota import _json
from rota._time import parse_duration
from rota.commands import COMMAND_TASK, parse_command_line
from rota.errors import InvalidArgument, RotaError, UnknownTask
from rota.scheduling.triggers import Trigger, at, cron, every, time_zone
from rota.web import _json_shapes as shapes

__all__ = [
    "OPTION_FIELDS",
    "TRIGGER_KINDS",
    "FieldError",
    "FieldErrors",
    "call",
    "call_kwargs",
    "field_of",
    "json_field",
    "next_fires",
    "options",
    "read_all",
    "text",
    "trigger",
]

#: The task options a form may override.
OPTION_FIELDS = ("queue", "priority", "retries", "host")
#: The kinds of trigger the schedule form offers.
TRIGGER_KINDS = ("every", "cron", "at")

_INTEGER = re.compile(r"[+-]?[0-9]{1,4000}")  # (int() takes up to 4300 digits)
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)")


@dataclass
class FieldError(Exception):
    """A form value was refused: ``message`` goes beside ``field``."""

    field: str
    message: str

    def __str__(self) -> str:
        return self.message


class FieldErrors(Exception):
    """Several form values refused at once: ``errors`` maps each field to its message."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(errors.values()))
        self.errors = errors


def read_all(readers: Mapping[str, Callable[[], Any]]) -> dict[str, Any]:
    """Each reader's value, by name; when some refuse their field
    (:class:`FieldError`), :class:`FieldErrors` with every refusal, so that
    a form shows them all at once."""
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for name, read in readers.items():
        try:
            values[name] = read()
        except FieldError as exc:
            errors.setdefault(exc.field, exc.message)
    if errors:
        raise FieldErrors(errors)
    return values


def field_of(exc: Exception, fields: tuple[str, ...]) -> str:
    """The form field an error from ``app.admin`` is about: the field whose
    name starts the message, ``task`` for an unknown task, else ``""``."""
    if isinstance(exc, FieldError):
        return exc.field
    if isinstance(exc, UnknownTask):
        return "task"
    message = str(exc)
    for name in fields:
        if re.match(rf"(?:schedule '[^']*': )?(?:schedule )?{re.escape(name)}\b", message):
            return name
    return ""


def text(form: Mapping[str, Any], name: str) -> str:
    """The form's ``name`` field, stripped; empty when missing."""
    value = form.get(name)
    return value.strip() if isinstance(value, str) else ""


def json_field(form: Mapping[str, Any], name: str, empty: Any) -> Any:
    """The JSON value typed in field ``name`` (``empty`` when left blank), of
    the JSON type that field takes (``args`` an array, ``kwargs`` an object)."""
    raw = text(form, name)
    if not raw:
        return empty
    try:
        value = _json.parse(raw, what=name)
        shapes.check({name: value})
    except RotaError as exc:
        raise FieldError(name, str(exc)) from None
    return value


def call(form: Mapping[str, Any]) -> tuple[str, list[Any]]:
    """The task and positional arguments a form names: its task and ``args``,
    or, when it has a command line, the built-in command task and that line's
    argv (split as a shell would, never run through one)."""
    task, line = text(form, "task"), text(form, "command")
    if not line:
        if task == COMMAND_TASK:
            raise FieldError("command", f"{COMMAND_TASK} needs a command line")
        if not task:
            raise FieldError("task", "choose a task, or type a command line")
        return task, json_field(form, "args", [])
    if task not in ("", COMMAND_TASK):
        raise FieldError("task", f"a command line runs as {COMMAND_TASK}: leave the task empty")
    try:
        return COMMAND_TASK, [parse_command_line(line)]
    except InvalidArgument as exc:
        raise FieldError("command", str(exc)) from None


def call_kwargs(form: Mapping[str, Any]) -> Any:
    """The keyword arguments a form names: its ``kwargs``, with, for a
    command line, the ``cmd_timeout`` typed (``90``, ``"15m"``) as the
    command's ``timeout`` in seconds."""
    kwargs = json_field(form, "kwargs", {}) or {}  # an object, or null: none
    raw = text(form, "cmd_timeout")
    if not raw:
        return kwargs
    if not text(form, "command") and text(form, "task") != COMMAND_TASK:
        raise FieldError("cmd_timeout", "a command timeout goes with a command line")
    try:
        seconds = parse_duration(_typed(raw), what="command timeout", positive=True)
    except RotaError as exc:
        raise FieldError("cmd_timeout", str(exc)) from None
    if "timeout" in kwargs:
        raise FieldError(
            "cmd_timeout",
            "the keyword arguments give the command a timeout too: give it in one place",
        )
    return kwargs | {"timeout": seconds}


def _typed(raw: str) -> Any:
    """A number typed as text becomes a number; other text stays text, for
    ``app.admin`` to refuse with its own message."""
    if _INTEGER.fullmatch(raw):
        return int(raw)
    if _NUMBER.fullmatch(raw):
        return float(raw)
    return raw


def options(form: Mapping[str, Any]) -> dict[str, Any]:
    """The task options filled in (queue, priority, retries, host); blank ones are left out."""
    found = {}
    for name in OPTION_FIELDS:
        raw = text(form, name)
        if raw:
            found[name] = raw if name in ("queue", "host") else _typed(raw)
    return found


def seconds(form: Mapping[str, Any], name: str) -> float | str | None:
    """A duration field (``30``, ``1.5``, ``"90s"``, ``"15m"``) as typed; None when blank."""
    raw = text(form, name)
    return _typed(raw) if raw else None


def trigger(form: Mapping[str, Any]) -> Trigger:
    """The trigger the form describes: ``kind`` with its ``interval``, ``cron``
    and ``tz``, or ``at`` (ISO 8601; without an offset, in ``tz``, else UTC).
    A time zone other than UTC given to an every trigger is refused: it
    would be ignored."""
    kind = text(form, "kind")
    try:
        if kind == "every":
            if text(form, "tz") not in ("", "UTC"):
                raise FieldError("tz", "an every trigger counts seconds: it takes no time zone")
            raw = text(form, "interval")
            if not raw:
                raise FieldError("interval", "interval is required for an every trigger")
            return every(parse_duration(_typed(raw), what="interval", positive=True))
        if kind == "cron":
            expr = text(form, "cron")
            if not expr:
                raise FieldError("cron", "a cron expression is required for a cron trigger")
            tz = text(form, "tz") or "UTC"
            _zone(tz)
            return cron(expr, tz)
        if kind == "at":
            moment = _moment(text(form, "at"))
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=_zone(text(form, "tz") or "UTC"))
            return at(moment)
    except FieldError:
        raise
    except RotaError as exc:
        raise FieldError(kind if kind != "every" else "interval", str(exc)) from None
    raise FieldError("kind", f"trigger kind must be every, cron or at, not {kind!r}")


def _zone(name: str) -> tzinfo:
    try:
        return time_zone(name)
    except RotaError as exc:
        raise FieldError("tz", str(exc)) from None


def _moment(raw: str) -> datetime:
    if not raw:
        raise FieldError("at", "a date and time is required for an at trigger")
    try:
        return datetime.fromisoformat(raw)
    except ValueError:
        raise InvalidArgument(
            f"at time {raw!r} is not a date and time; use e.g. 2030-01-31T09:00 (UTC) "
            "or 2030-01-31T09:00+08:00"
        ) from None


def next_fires(rule: Trigger, now: float, count: int = 3) -> list[float]:
    """The next ``count`` fire times of ``rule`` at or after ``now`` (fewer
    when the trigger ends)."""
    return rule.fires_from(rule.first_fire(now), count)
