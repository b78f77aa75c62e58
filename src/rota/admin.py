"""Every operator action, in one typed and validated layer: ``app.admin``.

Pausing a queue, retrying a job, changing a limit, editing a schedule or
sending a job by name: the CLI, the dashboard and the REST API all call these
methods, and so can any Python program::

    app.admin.pause_queue("emails")
    app.admin.retry_failed(queue="emails")

Each method checks its input before anything is written (the same rules
whichever door the call came through), checks that the caller's role allows
it (:class:`~rota.errors.Forbidden` otherwise) and, once the action has
applied, writes one :class:`~rota.models.AuditEntry` naming who did what,
through what and from where. A call without ``by=`` is a Python caller with
every right.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from rota import _json, _users, _validate
from rota._ids import unique_ids
from rota._time import parse_duration
from rota.commands import COMMAND_TASK, command_line_of, task_to_send
from rota.errors import Conflict, Forbidden, InvalidArgument, JobNotFound, NotFound
from rota.limits import Rate
from rota.models import QUEUE_MODES, AuditEntry, Job, JobState, QueueInfo, Schedule, User
from rota.retry import RetryPolicy
from rota.scheduling.define import define_schedule, naming_schedule, schedule_job
from rota.scheduling.triggers import Trigger, trigger_from_input
from rota.stores.roles import steering_progress
from rota.task import JobHandle, Task

#: A callback given the count of jobs done so far by a bulk action.
Progress = Callable[[int], object]

if TYPE_CHECKING:
    from rota.app import App
    from rota.stores.base import Store

__all__ = [
    "NOT_LOGGED_IN",
    "NO_ROLE",
    "ORIGINS",
    "ROLES",
    "Actor",
    "Admin",
    "cancel_refusal",
    "delete_refusal",
    "retry_refusal",
]

#: Roles, weakest first: a role may do what the ones before it may.
ROLES = ("viewer", "operator", "admin")
#: Where an action comes from.
ORIGINS = ("python", "cli", "web", "api")
#: The actor of a failed login's audit entry (``user.login_failed``; its
#: target is the user name tried): nobody acted. No user name has this form
#: (letters, digits, ``._@-``) and no :class:`Actor` may take it, so it is
#: never mistaken for someone who did.
NOT_LOGGED_IN = "(not logged in)"
#: The role of that entry: none was granted.
NO_ROLE = "-"

_SCHEDULE_FIELDS = frozenset(
    {"task", "trigger", "args", "kwargs", "jitter", "misfire", "grace", "overlap", "enabled"}
    | {"options"}
)
# Fields of a stored schedule's job options that are task options too.
_KEPT_OPTIONS = ("queue", "priority", "max_lost", "timeout", "host")


@dataclass(frozen=True, slots=True)
class Actor:
    """Who asks for an action: a ``name``, a ``role`` (viewer, operator or
    admin), the ``origin`` of the request (python, cli, web or api) and the
    client's ``address`` when it came over the network."""

    name: str = "python"
    role: str = "admin"
    origin: str = "python"
    address: str | None = None


class Admin:
    """Operator actions on an app's store; reached as ``app.admin``."""

    def __init__(self, app: App) -> None:
        self._app = app

    @property
    def _store(self) -> Store:
        return self._app.store

    # -- access and audit ----------------------------------------------------

    def _allow(self, by: Actor | None, role: str) -> Actor:
        actor = Actor() if by is None else by
        if not isinstance(actor, Actor):
            raise InvalidArgument(f"by must be an Actor, not {type(actor).__name__}")
        _validate.name(actor.name, "actor name")
        if actor.name == NOT_LOGGED_IN:
            raise InvalidArgument(f"actor name {NOT_LOGGED_IN!r} is kept for failed logins")
        if actor.role not in ROLES:
            raise InvalidArgument(f"role must be one of {', '.join(ROLES)}, not {actor.role!r}")
        if actor.origin not in ORIGINS:
            raise InvalidArgument(
                f"origin must be one of {', '.join(ORIGINS)}, not {actor.origin!r}"
            )
        if actor.address is not None:
            _validate.name(actor.address, "actor address")
        if ROLES.index(actor.role) < ROLES.index(role):
            raise Forbidden(f"{actor.name} is {actor.role}; this needs the {role} role")
        return actor

    def _record(self, actor: Actor, action: str, target: str, **details: Any) -> None:
        self._store.append_audit(
            AuditEntry(
                at=0.0,
                actor=actor.name,
                role=actor.role,
                origin=actor.origin,
                address=actor.address,
                action=action,
                target=target,
                details=details,
            )
        )

    def audit(
        self,
        limit: int = 100,
        cursor: str | None = None,
        *,
        actor: str | None = None,
        action: str | None = None,
        by: Actor | None = None,
    ) -> tuple[list[AuditEntry], str | None]:
        """A page of the audit log, newest first, and the cursor of the next
        page (None after the last); ``actor`` and ``action`` filter it."""
        self._allow(by, "viewer")
        return self._store.audit(limit=limit, cursor=cursor, actor=actor, action=action)

    # -- queues ----------------------------------------------------------------

    def pause_queue(self, name: str, *, by: Actor | None = None) -> None:
        """Stop claims from queue ``name``; it keeps accepting jobs. The queue
        need not have jobs yet, and pausing twice is harmless."""
        actor = self._allow(by, "operator")
        self._store.pause_queue(_validate.name(name, "queue"))
        self._record(actor, "queue.pause", name)

    def resume_queue(self, name: str, *, by: Actor | None = None) -> None:
        """Let workers claim from queue ``name`` again; :class:`NotFound`
        for a queue the store does not know (a mistyped name is not a
        queue resumed)."""
        actor = self._allow(by, "operator")
        self._queue(_validate.name(name, "queue"))
        self._store.resume_queue(name)
        self._record(actor, "queue.resume", name)

    def set_queue_mode(self, name: str, mode: str, *, by: Actor | None = None) -> None:
        """Set queue ``name`` to ``"running"``, ``"paused"`` or ``"debug"`` (it
        runs, and pauses itself at its first failed job). A queue may be
        paused or put in debug mode before its first job; ``"running"`` for
        a queue the store does not know is :class:`NotFound`."""
        actor = self._allow(by, "operator")
        _validate.name(name, "queue")
        if mode not in QUEUE_MODES:
            raise InvalidArgument(
                f"queue mode must be one of {', '.join(QUEUE_MODES)}, not {mode!r}"
            )
        if mode == "running":
            self._queue(name)
        setter = getattr(self._store, "set_queue_mode", None)
        if setter is None:
            raise InvalidArgument(f"the {self._store.kind} store has no queue modes")
        setter(name, mode)
        self._record(actor, "queue.mode", name, mode=mode)

    def purge_queue(
        self, name: str, *, by: Actor | None = None, progress: Progress | None = None
    ) -> int:
        """Delete every pending (scheduled or queued) job of queue ``name``;
        return how many. :class:`NotFound` for a queue with no jobs.

        A store may delete in parts, each for good: ``progress(done)`` is
        called after each with the count so far, and a call interrupted
        half-way (Ctrl-C) audits what it did, with ``interrupted: true``."""
        actor = self._allow(by, "operator")
        self._queue(_validate.name(name, "queue"))
        return self._in_parts(
            actor, "queue.purge", name, lambda: self._store.purge_queue(name), progress
        )

    def _in_parts(
        self,
        actor: Actor,
        action: str,
        target: str,
        work: Callable[[], int],
        progress: Progress | None,
    ) -> int:
        """Run a bulk steering verb of the store, keeping count of the parts
        it applied; audit the whole, or on an exception what was done."""
        done = 0

        def applied(count: int) -> None:
            nonlocal done
            done += count
            if progress is not None:
                progress(done)

        try:
            with steering_progress(applied):
                count = work()
        except BaseException:  # (Ctrl-C too) interrupted after some parts: audit them
            if done:
                self._record(actor, action, target, count=done, interrupted=True)
            raise
        self._record(actor, action, target, count=count)
        return count

    def _queue(self, name: str) -> QueueInfo:
        for info in self._store.queues():
            if info.name == name:
                return info
        raise NotFound(f"queue {name!r} not found (it has no jobs and is not paused)")

    # -- jobs ------------------------------------------------------------------

    def _resolve(self, job_id: str) -> str:
        if not isinstance(job_id, str) or not job_id:
            raise InvalidArgument(f"job id must be a non-empty string, not {job_id!r}")
        return self._store.resolve_job_id(job_id)

    def retry_job(self, job_id: str, *, by: Actor | None = None) -> str:
        """Queue a failed or cancelled job again with fresh attempt counts;
        return its full id (``job_id`` may be a unique prefix). A job with a
        unique key takes it again: :class:`Conflict` while another job holds
        the key (pending or running, or succeeded less than its
        ``unique_for`` ago), as a send would be a duplicate then."""
        actor = self._allow(by, "operator")
        full = self._resolve(job_id)
        if not self._store.retry([full], by=actor.name)[0]:
            raise retry_refusal(full, self._store.get_job(full))
        self._record(actor, "job.retry", full)
        return full

    def retry_jobs(self, job_ids: Sequence[str], *, by: Actor | None = None) -> list[bool]:
        """Retry jobs by full id in one store call, as :meth:`retry_job` each;
        True for each queued again (each audited), False for one unknown, in
        a state that cannot be retried or whose unique key another job holds
        (:func:`retry_refusal` says which)."""
        actor = self._allow(by, "operator")
        applied = self._store.retry(_full_ids(job_ids), by=actor.name)
        self._record_each(actor, "job.retry", job_ids, applied)
        return applied

    def cancel_jobs(self, job_ids: Sequence[str], *, by: Actor | None = None) -> list[bool]:
        """Cancel jobs by full id in one store call, as :meth:`cancel_job`
        each; True for each cancelled or asked to stop (each audited), False
        for one unknown or in a state that cannot be cancelled."""
        actor = self._allow(by, "operator")
        applied = self._store.cancel(_full_ids(job_ids), by=actor.name)
        self._record_each(actor, "job.cancel", job_ids, applied)
        return applied

    def delete_jobs(self, job_ids: Sequence[str], *, by: Actor | None = None) -> list[bool]:
        """Delete jobs by full id in one store call, as :meth:`delete_job`
        each; True for each deleted (each audited), False for one unknown or
        running (:func:`delete_refusal` says which)."""
        actor = self._allow(by, "operator")
        applied = self._store.delete(_full_ids(job_ids))
        self._record_each(actor, "job.delete", job_ids, applied)
        return applied

    def _record_each(
        self, actor: Actor, action: str, job_ids: Sequence[str], applied: Sequence[bool]
    ) -> None:
        for job_id, done in zip(job_ids, applied, strict=True):
            if done:
                self._record(actor, action, job_id)

    def cancel_job(self, job_id: str, *, by: Actor | None = None) -> str:
        """Cancel a job; return its full id. A scheduled or queued job is
        cancelled at once; a running one is stopped by its worker within about
        a second and ends cancelled, with who asked in its history."""
        actor = self._allow(by, "operator")
        full = self._resolve(job_id)
        if not self._store.cancel([full], by=actor.name)[0]:
            raise cancel_refusal(full, self._store.get_job(full))
        self._record(actor, "job.cancel", full)
        return full

    def delete_job(self, job_id: str, *, by: Actor | None = None) -> str:
        """Remove a job that is not running; return its full id."""
        actor = self._allow(by, "operator")
        full = self._resolve(job_id)
        if not self._store.delete([full])[0]:
            raise delete_refusal(full, self._store.get_job(full))
        self._record(actor, "job.delete", full)
        return full

    def retry_failed(
        self,
        queue: str | None = None,
        task: str | None = None,
        *,
        by: Actor | None = None,
        progress: Progress | None = None,
    ) -> int:
        """Retry every failed job of ``queue`` and/or ``task`` (of every queue
        and task when both are None); return how many. A job whose unique key
        another job holds now stays failed (see :meth:`retry_job`). Jobs that
        fail while it runs are left failed. ``progress`` and an interrupted
        call: as :meth:`purge_queue`."""
        actor = self._allow(by, "operator")
        if queue is not None:
            _validate.name(queue, "queue")
        if task is not None:
            _validate.name(task, "task name")
        target = " ".join(f"{k}={v}" for k, v in (("queue", queue), ("task", task)) if v) or "*"
        return self._in_parts(
            actor,
            "job.retry_failed",
            target,
            lambda: self._store.retry_failed(queue=queue, task=task, by=actor.name),
            progress,
        )

    # -- limits ----------------------------------------------------------------

    def set_limit(self, key: str, concurrency: int | None, *, by: Actor | None = None) -> None:
        """Override the concurrency limit of ``key`` cluster-wide: an int from
        0 (hold every job of the key) to 1,000,000, or None (back to the
        declared limit; :class:`NotFound` for a key the store does not know,
        with nothing changed). Bools are refused."""
        actor = self._allow(by, "operator")
        limit = _validate.limit_override(concurrency)
        if not self._store.set_limit(_validate.name(key, "limit key"), limit):
            raise _unknown_key(key)
        self._record(actor, "limit.set" if limit is not None else "limit.clear", key, limit=limit)

    def set_rate(self, key: str, rate: str | float | None, *, by: Actor | None = None) -> None:
        """Override the rate of ``key`` cluster-wide, in place of the rate its
        jobs carry (their burst stays): ``"2/s"``, ``"100/m"``, a float of
        jobs a second, or None (back to the jobs' own rate; :class:`NotFound`
        for a key the store does not know, with nothing changed)."""
        actor = self._allow(by, "operator")
        per_second = None if rate is None else Rate(rate).per_second
        if not self._store.set_rate(_validate.name(key, "limit key"), per_second):
            raise _unknown_key(key)
        action = "limit.rate" if per_second is not None else "limit.rate_clear"
        self._record(actor, action, key, rate=per_second)

    def clear_limit(self, key: str, *, by: Actor | None = None) -> None:
        """Remove the run-time override of ``key`` (none set: nothing to do);
        :class:`NotFound` for a key the store does not know."""
        self.set_limit(key, None, by=by)

    def reset_breaker(self, key: str, *, by: Actor | None = None) -> bool:
        """Close the open circuit breaker of ``key``; False (and nothing
        recorded) if it was not open; :class:`NotFound` for a key the store
        does not know."""
        actor = self._allow(by, "operator")
        closed = self._store.reset_breaker(_validate.name(key, "limit key"))
        if closed:
            self._record(actor, "limit.reset_breaker", key)
        elif not any(info.key == key for info in self._store.limits()):
            raise _unknown_key(key)
        return closed

    # -- schedules -------------------------------------------------------------

    def add_schedule(
        self,
        name: str,
        task: str,
        trigger: Mapping[str, Any] | Trigger,
        *,
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        jitter: float = 0.0,
        misfire: str = "coalesce",
        grace: float | None = None,
        overlap: str = "allow",
        enabled: bool | None = None,
        options: Mapping[str, Any] | None = None,
        by: Actor | None = None,
    ) -> Schedule:
        """Create or replace schedule ``name`` of the registered ``task``.

        ``trigger`` is a trigger (``every(...)``, ``cron(...)``, ``at(...)``) or
        its JSON description (``{"type": "every", ...}``); ``options`` are task
        option overrides (``queue``, ``priority``, ``retries``, ...). A
        replaced schedule keeps its paused state unless ``enabled`` is True
        or False. The rest is as :meth:`rota.App.schedule`."""
        actor = self._allow(by, "operator")
        stored = self._define(
            name,
            task,
            trigger,
            args=args,
            kwargs=kwargs,
            jitter=jitter,
            misfire=misfire,
            grace=grace,
            overlap=overlap,
            enabled=enabled,
            options=options,
        )
        self._record(actor, "schedule.add", name, task=stored.task, trigger=stored.trigger)
        return stored

    def update_schedule(self, name: str, *, by: Actor | None = None, **changes: Any) -> Schedule:
        """Change some fields of schedule ``name`` (the keyword arguments of
        :meth:`add_schedule`); the others keep their stored values."""
        actor = self._allow(by, "operator")
        unknown = set(changes) - _SCHEDULE_FIELDS
        if unknown:
            raise InvalidArgument(f"unknown schedule field(s): {', '.join(sorted(unknown))}")
        old = self._schedule(name)
        payload = _json.loads(old.payload) or {}
        kept = {k: old.job_options.get(k) for k in _KEPT_OPTIONS if old.job_options.get(k)}
        kept["retries"] = max(0, int(old.job_options.get("max_attempts") or 1) - 1)
        if old.job_options.get("retry"):
            kept["backoff"] = RetryPolicy.decode(old.job_options["retry"]).backoff
        values: dict[str, Any] = {
            "task": old.task,
            "trigger": old.trigger,
            "args": payload.get("args", []),
            "kwargs": payload.get("kwargs", {}),
            "jitter": old.jitter,
            "misfire": old.misfire,
            "grace": old.grace,
            "overlap": old.overlap,
            "enabled": old.enabled,
            "options": kept,
        }
        if changes.get("options") is not None:  # options change one by one too
            changes = changes | {"options": kept | dict(changes["options"])}
        values.update(changes)
        stored = self._define(name, values.pop("task"), values.pop("trigger"), **values)
        self._record(actor, "schedule.update", name, changed=sorted(changes))
        return stored

    def _define(
        self,
        name: str,
        task: str,
        trigger: Mapping[str, Any] | Trigger,
        *,
        options: Mapping[str, Any] | None,
        **fields: Any,
    ) -> Schedule:
        _validate.name(name, "schedule name")
        if isinstance(trigger, Mapping):
            trigger = trigger_from_input(trigger)
        with naming_schedule(name):
            bound = self._task(task, options)
            for key in ("jitter", "grace"):
                if fields.get(key) is not None:
                    fields[key] = parse_duration(fields[key], what=key)
            return define_schedule(self._app, name, bound, trigger, **fields)

    def _task(self, name: str, options: Mapping[str, Any] | None) -> Task[Any, Any]:
        task = task_to_send(self._app, _validate.name(name, "task name"))
        if options is None:
            return task
        if not isinstance(options, Mapping):
            raise InvalidArgument(f"options must be a dict, not {type(options).__name__}")
        return task.options(**options)

    def _schedule(self, name: str) -> Schedule:
        found = self._store.get_schedule(_validate.name(name, "schedule name"))
        if found is None:
            raise NotFound(f"schedule {name!r} not found")
        return found

    def pause_schedule(self, name: str, *, by: Actor | None = None) -> None:
        """Stop schedule ``name`` from firing until it is resumed."""
        self._set_enabled(name, False, by)

    def resume_schedule(self, name: str, *, by: Actor | None = None) -> None:
        """Let schedule ``name`` fire again; missed fires follow its misfire policy."""
        self._set_enabled(name, True, by)

    def _set_enabled(self, name: str, enabled: bool, by: Actor | None) -> None:
        actor = self._allow(by, "operator")
        if not self._store.set_schedule_enabled(_validate.name(name, "schedule name"), enabled):
            raise NotFound(f"schedule {name!r} not found")
        self._record(actor, "schedule.resume" if enabled else "schedule.pause", name)

    def remove_schedule(self, name: str, *, by: Actor | None = None) -> None:
        """Delete schedule ``name``; the jobs it sent stay."""
        actor = self._allow(by, "operator")
        if not self._store.remove_schedule(_validate.name(name, "schedule name")):
            raise NotFound(f"schedule {name!r} not found")
        self._record(actor, "schedule.remove", name)

    def run_schedule_now(self, name: str, *, by: Actor | None = None) -> str:
        """Enqueue one job of schedule ``name`` now, with its arguments and job
        options; return the job's id (an existing job's id when a job with the
        same unique key is pending). It becomes the schedule's last job, which
        its next fires' overlap rule sees (``skip``: no fire while it is
        pending or running); its own fire is not held back by that rule. The
        schedule's next fire does not move. Only the stored schedule is used:
        no task code is needed."""
        actor = self._allow(by, "operator")
        found = self._schedule(name)
        job = schedule_job(found, job_id=unique_ids.next(), fire_time=self._store.now())
        result = self._store.run_schedule(name, job)
        if result is None:  # removed since it was read
            raise NotFound(f"schedule {name!r} not found")
        self._record(actor, "schedule.run", name, job=result.id, duplicate=result.duplicate)
        return result.id

    # -- sending ---------------------------------------------------------------

    def send(
        self,
        task: str,
        args: list[Any] | tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        *,
        options: dict[str, Any] | None = None,
        delay: float | str | None = None,
        by: Actor | None = None,
    ) -> JobHandle[Any]:
        """Send a job of the registered ``task`` by name, validated as
        :meth:`rota.Task.send` (JSON arguments, option bounds); ``delay`` in
        seconds or a duration such as ``"5m"``."""
        actor = self._allow(by, "operator")
        bound = self._task(task, options)
        if not isinstance(args, list | tuple):
            raise InvalidArgument(f"args must be a list or a tuple, not {type(args).__name__}")
        if kwargs is not None and not isinstance(kwargs, dict):
            raise InvalidArgument(f"kwargs must be a dict, not {type(kwargs).__name__}")
        wait = 0.0 if delay is None else parse_duration(delay, what="delay")
        handle = bound.send_in(wait, *args, **(kwargs or {}))
        extra: dict[str, Any] = {}
        if bound.opts.host is not None:  # the host it waits for is part of what was asked
            extra["host"] = bound.opts.host
        if bound.name == COMMAND_TASK:  # a command line is what an operator ran: keep it
            extra["command"] = command_line_of(bound.name, args)
        self._record(
            actor,
            "job.send",
            handle.id,
            task=bound.name,
            duplicate=handle.duplicate,
            delay=wait,
            **extra,
        )
        return handle

    # -- users: dashboard and API accounts (admin role) -------------------------

    def add_user(self, name: str, role: str, password: str, *, by: Actor | None = None) -> None:
        """Create a user with ``role`` (viewer, operator or admin) and ``password``
        (at least 8 characters, kept only as an Argon2 hash)."""
        actor = self._allow(by, "admin")
        _users.add_user(self._store, name, role, password)
        self._record(actor, "user.add", name, role=role)

    def remove_user(self, name: str, *, by: Actor | None = None) -> None:
        """Remove a user; its API tokens stop working at once."""
        actor = self._allow(by, "admin")
        _users.remove_user(self._store, name)
        self._record(actor, "user.remove", name)

    def set_role(self, name: str, role: str, *, by: Actor | None = None) -> None:
        """Change a user's role."""
        actor = self._allow(by, "admin")
        old = _users.set_role(self._store, name, role)
        self._record(actor, "user.role", name, role=role, previous=old)

    def set_password(self, name: str, password: str, *, by: Actor | None = None) -> None:
        """Change a user's password (sessions opened with the old one end)."""
        actor = self._allow(by, "admin")
        _users.set_password(self._store, name, password)
        self._record(actor, "user.password", name)

    def users(self, *, by: Actor | None = None) -> list[User]:
        """Every user, by name, with the labels of its API tokens."""
        self._allow(by, "admin")
        return self._store.users()

    def create_token(self, name: str, label: str, *, by: Actor | None = None) -> str:
        """A new API token ``label`` for user ``name`` (replacing one of the same
        label). The secret is returned once: only its SHA-256 hash is kept."""
        actor = self._allow(by, "admin")
        secret = _users.create_token(self._store, name, label)
        self._record(actor, "user.token", name, label=label)
        return secret

    def revoke_token(self, name: str, label: str, *, by: Actor | None = None) -> None:
        """Revoke user ``name``'s API token ``label``."""
        actor = self._allow(by, "admin")
        _users.revoke_token(self._store, name, label)
        self._record(actor, "user.revoke", name, label=label)

    def authenticate(self, name: str, password: str, *, by: Actor | None = None) -> User | None:
        """The user whose name and password these are, else None. A failure is
        written to the audit log as ``user.login_failed`` of the user name
        tried (its target; never the password), by actor
        :data:`NOT_LOGGED_IN` with role :data:`NO_ROLE`: ``by`` says only from
        where (origin and address)."""
        actor = self._allow(by, "viewer")
        user = _users.authenticate(self._store, name, password)
        if user is None:
            shown = name[:64] if isinstance(name, str) and name.isprintable() else "?"
            nobody = replace(actor, name=NOT_LOGGED_IN, role=NO_ROLE)
            self._record(nobody, "user.login_failed", shown or "?")
        return user

    def user_for_token(self, secret: str, *, by: Actor | None = None) -> User | None:
        """The user holding the API token ``secret``, or None."""
        self._allow(by, "viewer")
        return _users.user_for_token(self._store, secret)

    def start_session(self, name: str, *, by: Actor | None = None) -> tuple[str, str]:
        """A new dashboard session of user ``name`` (who just logged in): its
        secret, for the session's cookie, and its token's label; the user's
        sessions past their age end. Written to the audit log as
        ``user.login``, by the user (``by`` says from where)."""
        actor = self._allow(by, "viewer")
        user, secret, label = _users.start_session(self._store, name)
        self._record(replace(actor, name=user.name, role=user.role), "user.login", user.name)
        return secret, label

    def end_session(self, name: str, label: str, *, by: Actor | None = None) -> None:
        """End user ``name``'s dashboard session ``label`` (Log out), written
        to the audit log as ``user.logout``."""
        actor = self._allow(by, "viewer")
        _users.end_session(self._store, name, label)
        self._record(actor, "user.logout", name)

    def user_for_session(self, secret: str, *, by: Actor | None = None) -> User | None:
        """The user whose live dashboard session has ``secret``, or None."""
        self._allow(by, "viewer")
        return _users.user_for_session(self._store, secret)


def _unknown_key(key: str) -> NotFound:
    return NotFound(
        f"limit key {key!r} not found: no job with it was claimed and no limit was set on it "
        "(rota limits list shows the keys)"
    )


def _full_ids(job_ids: Sequence[str]) -> list[str]:
    """``job_ids`` as a list, each a non-empty string (else ``InvalidArgument``)."""
    for job_id in job_ids:
        if not isinstance(job_id, str) or not job_id:
            raise InvalidArgument(f"job id must be a non-empty string, not {job_id!r}")
    return list(job_ids)


def retry_refusal(job_id: str, job: Job | None) -> JobNotFound | Conflict:
    """Why a retry of ``job_id`` (now ``job``, None if gone) did not apply."""
    if job is None:
        return JobNotFound(job_id)
    if job.state not in (JobState.FAILED, JobState.CANCELLED):
        return Conflict(
            f"job {job_id} is {job.state.value}; only failed or cancelled jobs can be retried"
        )
    return Conflict(
        f"job {job_id} was not retried: a job with the same unique key "
        f"{job.unique_key!r} is pending or running (or succeeded less than "
        "its unique_for ago)"
    )


def delete_refusal(job_id: str, job: Job | None) -> JobNotFound | Conflict:
    """Why a delete of ``job_id`` (now ``job``, None if gone) did not apply."""
    if job is None:
        return JobNotFound(job_id)
    return Conflict(f"job {job_id} is {job.state.value}; a running job cannot be deleted")


def cancel_refusal(job_id: str, job: Job | None) -> JobNotFound | Conflict:
    """Why a cancel of ``job_id`` (now ``job``, None if gone) did not apply."""
    if job is None:
        return JobNotFound(job_id)
    if job.state is JobState.RUNNING:
        return Conflict(f"job {job_id} runs and was already asked to stop")
    return Conflict(
        f"job {job_id} is {job.state.value}; only scheduled, queued or running jobs can be "
        "cancelled"
    )
