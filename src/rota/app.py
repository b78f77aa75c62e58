"""The :class:`App`: a task registry bound to a store URL."""

from __future__ import annotations

import inspect
import logging
import os
import threading
import weakref
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar, overload

from rota import _validate, commands
from rota._json import DEFAULT_PAYLOAD_CAP
from rota._time import parse_duration
from rota.errors import InvalidArgument, UnknownTask
from rota.models import EnqueueResult, LimitInfo, NewJob, Schedule
from rota.stores import Store, open_replica, open_store, read_url_of, redact_url, replica_url
from rota.stores.base import DEFAULT_LOG_CAP
from rota.task import JobHandle, Task, TaskOptions

if TYPE_CHECKING:
    from rota.admin import Admin
    from rota.scheduling.triggers import Trigger

P = ParamSpec("P")
R = TypeVar("R")
#: A function run in each worker process when it starts or stops (see
#: :meth:`App.on_worker_start`).
WorkerHook = TypeVar("WorkerHook", bound=Callable[[], object])

_log = logging.getLogger("rota.worker")

DEFAULT_URL = "sqlite:///rota.db"


class InlineRunner(Protocol):
    """What runs an app's jobs in the sending thread (see :mod:`rota.testing`)."""

    def sent(self, jobs: Sequence[NewJob]) -> None:
        """Called after ``jobs`` were enqueued by ``send``; runs what is runnable."""

    def run_pending(self) -> object:
        """Run every job that is runnable now."""


class Registry:
    """A set of tasks. Libraries declare tasks on a registry; apps include it.

    Each app that includes a registry gets its own copy of every task, bound
    to it (see :meth:`App.include`), those declared on the registry after the
    include too. The objects ``@registry.task`` returns send through the app
    that included the registry last, as a module-level task declared on one
    app would; code that may run beside several apps sends with
    ``app.get_task(name).send(...)``.
    """

    def __init__(self) -> None:
        self.tasks: dict[str, Task[Any, Any]] = {}
        #: The apps that included this registry, the latest last (weakly:
        #: an app dropped is forgotten).
        self._includers: list[weakref.ref[App]] = []

    def _bound_app(self) -> App | None:
        return None

    @overload
    def task(self, fn: Callable[P, R], /) -> Task[P, R]: ...

    @overload
    def task(
        self, fn: None = None, /, *, name: str | None = None, **options: Any
    ) -> Callable[[Callable[P, R]], Task[P, R]]: ...

    def task(
        self, fn: Callable[P, R] | None = None, /, *, name: str | None = None, **options: Any
    ) -> Task[P, R] | Callable[[Callable[P, R]], Task[P, R]]:
        """Register a function as a task: ``@app.task`` or ``@app.task(queue=..., retries=3)``.

        Options: ``queue``, ``priority``, ``retries``, ``backoff=(base_s, max_s)``,
        ``timeout``, ``lease``, ``max_lost``, ``concurrency``, ``rate``, ``breaker``,
        ``unique``, ``unique_for``. The name defaults to the function's qualified
        name, which is the same however the module is loaded; ``rota.cmd`` is
        reserved for the built-in task that runs command lines.
        """
        if isinstance(fn, str):  # @app.task("name"): the name would be taken for the function
            raise InvalidArgument(
                f"@app.task takes the task's name as a keyword: @app.task(name={fn!r})"
            )
        task_options = TaskOptions.build(**options)

        def register(func: Callable[P, R]) -> Task[P, R]:
            if not callable(func):
                raise InvalidArgument(f"@app.task takes a function, not {func!r}")
            task_name = _validate.name(func.__qualname__ if name is None else name, "task name")
            commands.refuse_reserved(task_name)
            if task_name in self.tasks and self.tasks[task_name].fn is not func:
                existing = self.tasks[task_name].fn
                raise InvalidArgument(
                    f"two tasks are named {task_name!r} ({existing.__module__} and "
                    f"{func.__module__}); give one of them name=..."
                )
            task: Task[P, R] = Task(func, task_name, task_options, self._bound_app())
            self._refuse_in_includers(task_name, task, set())
            self.tasks[task_name] = task
            for app in self._including_apps():  # declared after an include: joins too
                app._add_included(self, task_name, task)
            return task

        return register(fn) if fn is not None else register

    def _including_apps(self) -> list[App]:
        """The apps that included this registry and still exist, the latest last."""
        self._includers = [ref for ref in self._includers if ref() is not None]
        return [app for ref in self._includers if (app := ref()) is not None]

    def _refuse_in_includers(self, name: str, task: Task[Any, Any], seen: set[int]) -> None:
        """Raise :class:`InvalidArgument` if an app that includes this registry
        (or includes an app that does) has another task named ``name``."""
        for app in self._including_apps():
            if id(app) in seen:
                continue
            seen.add(id(app))
            known = app.tasks.get(name)
            if known is None:
                app._refuse_in_includers(name, task, seen)
            elif (known.fn, known.opts) != (task.fn, task.opts):
                raise InvalidArgument(
                    f"a task named {name!r} is already registered in {app!r}, "
                    f"which includes this registry"
                )


class App(Registry):
    """Tasks plus the store they run through.

    The store URL is resolved when the store is first used: the ``url``
    given here (or to :meth:`configure`), else ``ROTA_URL`` from the
    environment, else ``sqlite:///rota.db``. Nothing connects until then.

    A PostgreSQL or MySQL store may have a read replica that serves the dashboard,
    ``rota status`` and the other displays (:attr:`reader`): ``read_url``,
    else the store URL's ``read_url`` option, else ``ROTA_READ_URL``.
    """

    #: Whether a Redis store opened by this app waits ``retry_for`` for a
    #: server it has not reached yet (``open_store``'s ``wait``). The CLI's
    #: one-shot commands turn it off to fail at once; so does a worker's
    #: start while it waits for its store with pauses of its own, for every
    #: app (``App.wait_for_store``), those its module builds as it loads too.
    wait_for_store: bool = True

    def __init__(
        self,
        url: str | None = None,
        *,
        lease: float | str = 30.0,
        payload_cap: int = DEFAULT_PAYLOAD_CAP,
        retention: float | str = "7d",
        audit_retention: float | str = "90d",
        job_log_cap: int = DEFAULT_LOG_CAP,
        name: str = "rota",
        commands: bool = False,
        read_url: str | None = None,
    ) -> None:
        super().__init__()
        self._url = url or None
        self._read_url = read_url or None
        if self._url is not None:
            given = self._read_url or read_url_of(self._url)
            if given is not None:
                replica_url(self._url, given)  # refuse a bad pair now, not on first read
        self._opened_url: str | None = None
        self._inline: InlineRunner | None = None
        #: A store :meth:`close` leaves open: inline mode's private store,
        #: which its ``with`` block closes (see :mod:`rota.testing`).
        self._held_store: Store | None = None
        self.lease = parse_duration(lease, what="lease", positive=True)
        self.payload_cap = _validate.integer(payload_cap, "payload_cap", 1, 2**31 - 1)
        self.retention = parse_duration(retention, what="retention")
        self.audit_retention = parse_duration(audit_retention, what="audit_retention")
        #: Bytes of output one attempt of a job keeps (the oldest lines go first).
        self.job_log_cap = _validate.integer(job_log_cap, "job_log_cap", 1, 2**31 - 1)
        self.name = name
        self._store: Store | None = None
        #: Open only a store that exists, when the store is first used (see
        #: ``open_store``'s ``must_exist``): a missing SQLite file, PostgreSQL
        #: schema or MySQL database is then an error naming it, not a new,
        #: empty store. The CLI's commands and the dashboard that read or
        #: steer what is there set it.
        self.must_exist = False
        self._reader: Store | None = None
        self._store_lock = threading.Lock()
        self._on_start: list[Callable[[], object]] = []
        self._on_stop: list[Callable[[], object]] = []
        self.limits = Limits(self)
        if commands:
            self.enable_commands()

    def __repr__(self) -> str:
        return f"<rota.App {redact_url(self.url)} tasks={len(self.tasks)}>"

    def enable_commands(self) -> None:
        """Register the built-in task ``rota.cmd``, which runs any command line
        it is sent (``rota send --cmd``, ``rota schedules add ... -- CMD``).
        Off unless asked (``App(commands=True)``, ``rota worker --commands``):
        a worker that has it runs whatever command whoever can write to the
        store sends it."""
        if commands.COMMAND_TASK not in self.tasks:
            commands.register(self, commands.COMMAND_TASK, None, {})

    def _bound_app(self) -> App | None:
        return self

    def on_worker_start(self, fn: WorkerHook) -> WorkerHook:
        """Run ``fn()`` once in each worker process, before it claims its
        first job: ``@app.on_worker_start``.

        The place for what a process keeps for every job it runs (an HTTP
        client, a connection pool), set up once instead of once per job;
        close it in an :meth:`on_worker_stop` hook. Hooks run in the order
        they were registered. One that raises stops the worker before it
        claims anything, with that error. In ``--mode processes`` each child
        process that runs jobs runs the hooks too, when it starts (and the
        stop hooks when the worker closes it), so every process has its own.
        """
        self._on_start.append(_hook(fn, "on_worker_start"))
        return fn

    def on_worker_stop(self, fn: WorkerHook) -> WorkerHook:
        """Run ``fn()`` once in each worker process as it stops, after its
        running jobs finished or were released: ``@app.on_worker_stop``.

        Hooks run in the reverse order of registration; one that raises is
        logged and the others still run.
        """
        self._on_stop.append(_hook(fn, "on_worker_stop"))
        return fn

    def _worker_started(self) -> None:
        """Run the :meth:`on_worker_start` hooks (the worker calls this)."""
        for fn in self._on_start:
            fn()

    def _worker_stopped(self) -> None:
        """Run the :meth:`on_worker_stop` hooks, last registered first."""
        for fn in reversed(self._on_stop):
            try:
                fn()
            except Exception:
                _log.exception("worker stop hook %s failed", getattr(fn, "__qualname__", fn))

    @cached_property
    def admin(self) -> Admin:
        """Every operator action (queues, jobs, limits, schedules, sending by
        name), validated and written to the audit log: see :mod:`rota.admin`."""
        from rota.admin import Admin

        return Admin(self)

    @property
    def url(self) -> str:
        """The store URL: the one the open store uses, else the one it would open now."""
        if self._store is not None and self._opened_url is not None:
            return self._opened_url
        return self._url or os.environ.get("ROTA_URL") or DEFAULT_URL

    @url.setter
    def url(self, value: str) -> None:
        # Takes effect when the store next opens; configure() refuses an open store.
        self._url = value or None

    @property
    def read_url(self) -> str | None:
        """The URL of the read replica that serves :attr:`reader`, or None:
        the ``read_url`` given to the app, else the store URL's ``read_url``
        option, else ``ROTA_READ_URL`` from the environment."""
        return self._read_url or read_url_of(self.url) or os.environ.get("ROTA_READ_URL") or None

    @read_url.setter
    def read_url(self, value: str | None) -> None:
        # Takes effect when the reader next opens.
        self._read_url = value or None

    def configure(self, *, url: str) -> None:
        """Point the app at another store before its first use.

        Raises :class:`InvalidArgument` once the store is open (call
        :meth:`close` first): jobs already sent went to the open store.
        """
        if not isinstance(url, str) or not url:
            raise InvalidArgument(f"url must be a non-empty store URL, not {url!r}")
        with self._store_lock:
            if self._store is not None:
                raise InvalidArgument(
                    f"the store of this app is already open ({redact_url(self.url)}); "
                    f"call app.close() before configure(url=...)"
                )
            self._url = url

    @property
    def store(self) -> Store:
        """The store, opened on first use."""
        if self._store is None:
            with self._store_lock:
                if self._store is None:
                    url = self.url
                    self._store = open_store(
                        url, must_exist=self.must_exist, wait=self.wait_for_store
                    )
                    self._opened_url = url
        return self._store

    @property
    def reader(self) -> Store:
        """The store that reads for display: the dashboard and its API,
        ``rota status``, ``rota jobs list``, exports and metrics.

        With a :attr:`read_url`, a read-only store on that replica (a
        PostgreSQL streaming replica, or a MySQL / MariaDB replica; opened
        on first use, in the store URL's schema or database unless the read
        URL names it); it lags the primary by the replication delay. Without
        one, :attr:`store` itself. Every change, and every read a change
        depends on, goes through :attr:`store`. Raises
        :class:`InvalidArgument` when a read URL is set on a SQLite or Redis
        store."""
        if self._reader is not None:
            return self._reader
        read_url = self.read_url
        if read_url is None:
            return self.store
        with self._store_lock:
            if self._reader is None:
                self._reader = open_replica(self.url, read_url)
        return self._reader

    def use_store(self, store: Store) -> None:
        """Use an already opened store (tests, embedding)."""
        self._store = store
        self._opened_url = None

    def close(self) -> None:
        """Close the store's connections, and the reader's; the next use opens
        them again.

        Inside ``rota.testing.inline(app)`` the private store stays open (and
        keeps its jobs) until the ``with`` block ends: the app never falls
        through to its configured store in the middle of a test."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._store is not None and self._store is not self._held_store:
            self._store.close()
            self._store = None
            self._opened_url = None

    def _enqueue(self, jobs: Sequence[NewJob], connection: Any = None) -> list[EnqueueResult]:
        """Store ``jobs`` (``send`` and friends), in the open transaction of
        ``connection`` if given; in inline mode, run them now."""
        if connection is None:
            results = self.store.enqueue(jobs)
        else:
            enqueue_in = getattr(self.store, "enqueue_in", None)
            if enqueue_in is None:
                raise InvalidArgument(
                    f"sending in a database transaction (connection=) needs a PostgreSQL "
                    f"or MySQL store; this app's store is {self.store.kind}"
                )
            results = enqueue_in(connection, jobs)
        if self._inline is not None:
            self._inline.sent(jobs)
        return results

    def include(self, registry: Registry) -> None:
        """Add every task of ``registry`` to this app, as a copy bound to this app.

        This app's :meth:`get_task`, :attr:`admin`, workers and schedules use
        its copies, so they send to this app's store whatever other apps
        include the same registry. The tasks ``registry`` itself holds (the
        objects ``@registry.task`` returned) now send through this app: the
        most recent include wins, so a test that builds a new app per test, or
        a script with an app of its own, gets its own store, as with a task
        declared on an app. Including an :class:`App` leaves that app's tasks
        bound to it. Including a registry again is harmless; a task of another
        function or other options under a name already registered raises
        :class:`InvalidArgument`, and nothing is added.

        Tasks declared on ``registry`` after this call join this app too (a
        module of the library imported later); one whose name this app
        already has for another task is refused where it is declared.
        """
        for name, task in registry.tasks.items():
            known = self.tasks.get(name)
            if known is not None and (known.fn, known.opts) != (task.fn, task.opts):
                raise InvalidArgument(f"a task named {name!r} is already registered")
        for name, task in registry.tasks.items():
            self._add_included(registry, name, task)
        kept = [ref for ref in registry._includers if ref() is not self]
        registry._includers = [*kept, weakref.ref(self)]  # the latest last

    def _add_included(self, registry: Registry, name: str, task: Task[Any, Any]) -> None:
        """Add ``registry``'s ``task`` to this app as a bound copy (and so to
        the apps that include this one)."""
        if name not in self.tasks:
            bound = self.tasks[name] = task.bind(self)
            for app in self._including_apps():
                app._add_included(self, name, bound)
        if registry._bound_app() is None:
            task._app = self  # the declared object follows the latest include

    def get_task(self, name: str) -> Task[Any, Any]:
        """The task registered under ``name``, or :class:`UnknownTask`."""
        try:
            return self.tasks[name]
        except KeyError:
            raise UnknownTask(name, list(self.tasks)) from None

    def schedule(
        self,
        name: str,
        task: Task[Any, Any] | str,
        trigger: Trigger,
        *,
        args: tuple[Any, ...] | list[Any] = (),
        kwargs: dict[str, Any] | None = None,
        jitter: float = 0.0,
        misfire: str = "coalesce",
        grace: float | None = None,
        overlap: str = "allow",
        enabled: bool | None = None,
    ) -> Schedule:
        """Create or update (by ``name``) a schedule in the store.

        ``trigger`` is ``at(...)``, ``every(...)`` or ``cron(...)``. Re-running
        this on deploy updates the schedule without duplicating it, and keeps
        its next fire (unless the trigger changed) and its paused state. Jobs
        get the task's options; ``jitter`` delays each fire's job by a stable
        random amount below it; ``misfire`` is ``"coalesce"`` or ``"all"``;
        ``grace`` drops fires older than that many seconds; ``overlap`` is
        ``"allow"``, ``"skip"`` or ``"queue"``. ``enabled=False`` creates the
        schedule paused or pauses an existing one, ``enabled=True`` creates
        it enabled or resumes it; left out, a new schedule is enabled and an
        existing one stays as it is.

        A bad definition raises before anything is stored, with a message
        that names the schedule (an unknown task name raises
        :class:`UnknownTask`, arguments over the payload cap
        :class:`~rota.errors.PayloadTooLarge`).
        """
        from rota.scheduling.define import define_schedule, naming_schedule

        with naming_schedule(name):
            return define_schedule(
                self,
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
            )

    def command(
        self,
        name: str,
        argv: Sequence[str] | str,
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        shell: bool = False,
        timeout: float | str | None = None,
        retries: int = 0,
        backoff: tuple[float, float] = (1.0, 300.0),
        ok_codes: Sequence[int] = (0,),
        queue: str = "default",
        concurrency: Any = None,
        output_cap: int = commands.DEFAULT_OUTPUT_CAP,
        grace: float | str = 5.0,
        **task_options: Any,
    ) -> commands.CommandTask:
        """Register task ``name`` whose jobs run the external command ``argv``.

        ``argv`` is a list of strings (no shell); a string is accepted only with
        ``shell=True``, for ``/bin/sh -c``. ``task.send()`` runs ``argv`` as
        registered; ``task.send(extra_args=["--site", "x"])`` appends arguments.
        ``env`` adds to the worker's environment. The command runs in its own
        process group; after ``timeout`` seconds, on cancel and when the worker
        stops, the group gets SIGTERM, then SIGKILL ``grace`` seconds later.
        An exit code outside ``ok_codes`` fails the attempt (retried with
        ``retries`` and ``backoff`` as any task); success returns ``exit_code``,
        ``duration``, and the last ``output_cap`` bytes of ``stdout`` and
        ``stderr`` with ``truncated`` flags. ``queue``, ``concurrency`` and the
        other ``task_options`` are those of :meth:`task` (the command's
        ``timeout`` replaces the task option). See :mod:`rota.commands`."""
        spec = commands.CommandSpec.build(
            argv,
            cwd=cwd,
            env=env,
            shell=shell,
            timeout=timeout,
            ok_codes=ok_codes,
            output_cap=output_cap,
            grace=grace,
        )
        options = task_options | {"retries": retries, "backoff": backoff, "queue": queue}
        if concurrency is not None:
            options["concurrency"] = concurrency
        return commands.register(self, name, spec, options)

    def handle(self, job_id: str) -> JobHandle[Any]:
        """A handle on an existing job."""
        return JobHandle(self, job_id)


def _hook(fn: object, what: str) -> Callable[[], object]:
    """``fn`` if it can be called without arguments, else :class:`InvalidArgument`."""
    if not callable(fn):
        raise InvalidArgument(f"{what} takes a function, not {fn!r}")
    try:
        inspect.signature(fn).bind()
    except TypeError:
        raise InvalidArgument(
            f"{what} takes a function called without arguments; "
            f"{getattr(fn, '__qualname__', fn)}{inspect.signature(fn)} needs some"
        ) from None
    except ValueError:  # not introspectable (some builtins): taken as it is
        pass
    return fn


class Limits:
    """Run-time flow-control settings: ``app.limits.set("spiders", 8)``.

    Shorthands for the limit actions of :attr:`App.admin` (validated and
    audited there)."""

    def __init__(self, app: App) -> None:
        self._app = app

    def set(self, key: str, concurrency: int | None) -> None:
        """Override the concurrency limit of ``key`` cluster-wide (None: back to declared).

        ``concurrency`` is an int from 0 (hold every job of the key) to
        1,000,000; bools are refused."""
        self._app.admin.set_limit(key, concurrency)

    def clear(self, key: str) -> None:
        """Remove a run-time override."""
        self._app.admin.clear_limit(key)

    def set_rate(self, key: str, rate: str | float | None) -> None:
        """Override the rate of ``key`` cluster-wide (``"2/s"``, ``"100/m"``,
        a float of jobs a second; None: back to the rate its jobs carry)."""
        self._app.admin.set_rate(key, rate)

    def reset_breaker(self, key: str) -> bool:
        """Close the circuit breaker of ``key`` by hand: True if it was open
        (or half-open); False, with nothing changed, if it was not open;
        :class:`~rota.errors.NotFound` for a key the store does not know (no
        job with it was claimed and no limit was set on it)."""
        return self._app.admin.reset_breaker(key)

    def list(self) -> list[LimitInfo]:
        """Every key with its running count, limits, tokens and breaker state:
        the keys of jobs claimed so far and those given a limit at run time
        (a key whose jobs were sent but never claimed is not listed yet)."""
        return self._app.store.limits()
