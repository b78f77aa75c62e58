"""What the dashboard and the REST API show, written once over the store protocol.

Every page and every API endpoint reads through these functions; they use
only the inspection verbs of :class:`~rota.stores.base.Store`, so every
backend gets the dashboard for free. Actions go through :attr:`rota.App.admin`
(see :func:`actor`). Failures raise rota errors, which the web layer maps to
HTTP status codes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from math import inf
from typing import TYPE_CHECKING, Any, TypeVar

from rota import _json
from rota._wording import options_retry_text, read_policy, shown_options, still_running
from rota.admin import Actor
from rota.commands import command_line_of, command_options_of, shown_kwargs
from rota.diagnose import LOST_AFTER, is_overdue
from rota.errors import Conflict, JobNotFound, NotFound
from rota.models import (
    Job,
    JobPage,
    JobQuery,
    JobState,
    LimitInfo,
    MinuteStats,
    QueueInfo,
    Schedule,
    WorkerInfo,
)
from rota.retry import DEFAULT_POLICY, RetryPolicy
from rota.scheduling.history import sent_no_job
from rota.stores.base import Store
from rota.windows import window_totals

if TYPE_CHECKING:
    from starlette.requests import Request

    from rota.web._auth import Identity

#: The throughput windows of the overview, in seconds (None: all time).
WINDOWS: tuple[tuple[str, float | None], ...] = (
    ("5 min", 300.0),
    ("1 hour", 3600.0),
    ("1 day", 86400.0),
    ("all time", None),
)

#: Minutes shown by the live chart.
CHART_MINUTES = 60
#: The day chart: bars of this many minutes, this many of them (the last
#: still filling), all within the day the overview reads.
DAY_BAR_MINUTES = 30
DAY_BARS = 48

__all__ = [
    "CHART_MINUTES",
    "DAY_BARS",
    "DAY_BAR_MINUTES",
    "LOST_AFTER",
    "WINDOWS",
    "ChartPoint",
    "Conflict",
    "LimitView",
    "Live",
    "NotFound",
    "Overview",
    "QueueView",
    "ScheduleView",
    "WindowCount",
    "WorkerView",
    "actor",
    "cancelled_text",
    "current_error_only",
    "describe_trigger",
    "get_job",
    "known_names",
    "limits",
    "list_jobs",
    "live",
    "masked",
    "minute_points",
    "overview",
    "queues",
    "schedule",
    "schedules",
    "workers",
]


# -- views -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WindowCount:
    """Attempts that ended within a window: ``seconds`` None means all time.

    ``failed_attempts`` counts every attempt that failed, the ones retried
    since as well as those that left their job ``failed``; ``retrying`` counts
    those after which the job was scheduled to run again. Jobs now failed are
    the ``failed`` count of the queues' states.
    """

    label: str
    seconds: float | None
    succeeded: int = 0
    failed_attempts: int = 0
    retrying: int = 0

    @property
    def processed(self) -> int:
        """Succeeded plus failed attempts."""
        return self.succeeded + self.failed_attempts


@dataclass(frozen=True, slots=True)
class ChartPoint:
    """One bar of a live chart, from ``minute`` (epoch seconds // 60) on, a
    minute long or :data:`DAY_BAR_MINUTES` on the day chart: attempts that
    succeeded and attempts that failed (retried or not) in it."""

    minute: int
    succeeded: int
    failed_attempts: int


@dataclass(frozen=True, slots=True)
class QueueView:
    """A queue with its counts by state and its recent throughput."""

    name: str
    paused: bool
    counts: dict[JobState, int]
    windows: list[WindowCount]

    @property
    def total(self) -> int:
        """Jobs of the queue in any state."""
        return sum(self.counts.values())


@dataclass(frozen=True, slots=True)
class Live:
    """The cheap, frequently polled part of the overview (no per-job scans)."""

    now: float
    windows: list[WindowCount]
    #: The last hour, a bar a minute.
    chart: list[ChartPoint]
    #: The last day, a bar per :data:`DAY_BAR_MINUTES`.
    day_chart: list[ChartPoint]
    workers_online: int
    workers_lost: int


@dataclass(frozen=True, slots=True)
class Overview:
    """Everything the overview page shows."""

    live: Live
    queues: list[QueueView]
    counts: dict[JobState, int] = field(default_factory=dict)

    @property
    def failed_jobs(self) -> int:
        """Jobs now ``failed`` (retries used up), unlike the windows' failed attempts."""
        return self.counts.get(JobState.FAILED, 0)


@dataclass(frozen=True, slots=True)
class WorkerView(WorkerInfo):
    """A worker's heartbeat plus whether it is considered lost."""

    lost: bool = False
    seconds_since_heartbeat: float = 0.0


@dataclass(frozen=True, slots=True)
class LimitView(LimitInfo):
    """A flow-control key with its breaker state in words."""

    breaker: str = "closed"


@dataclass(frozen=True, slots=True)
class ScheduleView:
    """A schedule as the dashboard shows it."""

    name: str
    task: str
    trigger: dict[str, Any]
    description: str
    enabled: bool
    next_fire: float | None
    #: When it last fired: moves on every fire, those that sent no job too
    #: (dropped as older than the grace, or skipped by its overlap rule).
    last_fire: float | None
    last_job_id: str | None
    last_job_state: JobState | None
    #: The fire time of its last job, the last one actually sent (a run now's
    #: is when it was sent); None without one, or once it is purged.
    last_job_fire: float | None
    #: Why its last job failed (the job's error), when it did.
    last_job_error: str | None
    args: list[Any]
    kwargs: dict[str, Any]
    misfire: str
    grace: float | None
    overlap: str
    jitter: float
    skipped: int
    #: What its jobs are sent with (queue, priority, attempts, limit keys...);
    #: ``retry`` is the policy as :class:`JobView` gives a job's.
    job_options: dict[str, Any]
    #: How its jobs' failed attempts are retried, in words.
    retries: str
    #: Active, and its next fire long past: no scheduler seems to run.
    overdue: bool
    #: The command line a schedule of ``rota.cmd`` runs (shell-quoted), else "".
    command: str
    #: Its options beside the command line (timeout, ok codes...), else "".
    command_options: str

    @property
    def last_fire_sent_no_job(self) -> bool:
        """Its last fire sent no job (dropped or skipped): see :func:`sent_no_job`."""
        return sent_no_job(self.last_fire, self.last_job_id, self.last_job_fire)

    @property
    def last_job_error_line(self) -> str:
        """The first line of :attr:`last_job_error` ("" without one)."""
        lines = (self.last_job_error or "").strip().splitlines()
        return lines[0] if lines else ""


# -- who acts --------------------------------------------------------------


def actor(request: Request, identity: Identity) -> Actor:
    """The :class:`~rota.admin.Actor` of a request: ``api`` under ``/api/``,
    else ``web``, with the client's address."""
    origin = "api" if request.url.path.startswith("/api/") else "web"
    address = request.client.host if request.client else None
    return Actor(name=identity.name, role=identity.role.label, origin=origin, address=address)


def cancelled_text(store: Store, job_id: str) -> str:
    """What a cancel did: ``job ID cancelled``, or, for a job that still runs,
    that its worker stops it."""
    running = still_running(store.get_job(job_id))
    return f"job {job_id} runs: {running}" if running else f"job {job_id} cancelled"


# -- overview --------------------------------------------------------------


def _windows(
    rows: Iterable[MinuteStats], totals: Iterable[MinuteStats], now: float
) -> list[WindowCount]:
    rows = list(rows)
    result = []
    for label, seconds in WINDOWS:
        if seconds is None:
            counts = window_totals(totals, -inf)
        else:
            counts = window_totals(rows, now - seconds)
        result.append(WindowCount(label, seconds, counts.succeeded, counts.failed, counts.retried))
    return result


def _chart(
    rows: Iterable[MinuteStats], now: float, bars: int = CHART_MINUTES, minutes: int = 1
) -> list[ChartPoint]:
    """``bars`` bars of ``minutes`` each (aligned to multiples of it in UTC),
    the last holding ``now``, oldest first."""
    last = int(now // 60) // minutes * minutes
    first = last - (bars - 1) * minutes
    good = [0] * bars
    bad = [0] * bars
    for r in rows:
        if first <= r.minute < last + minutes:
            good[(r.minute - first) // minutes] += r.succeeded
            bad[(r.minute - first) // minutes] += r.failed
    return [ChartPoint(first + i * minutes, good[i], bad[i]) for i in range(bars)]


def minute_points(rows: Iterable[MinuteStats], now: float) -> list[ChartPoint]:
    """The last :data:`CHART_MINUTES` minutes of ``rows`` (summed over their
    queues and tasks), oldest first: the points of a per-minute chart."""
    return _chart(rows, now)


def _live(store: Store, rows: list[MinuteStats], totals: list[MinuteStats]) -> Live:
    now = store.now()
    workers = store.workers()
    lost = sum(1 for w in workers if now - w.heartbeat_at > LOST_AFTER)
    return Live(
        now=now,
        windows=_windows(rows, totals, now),
        chart=_chart(rows, now),
        day_chart=_chart(rows, now, DAY_BARS, DAY_BAR_MINUTES),
        workers_online=len(workers) - lost,
        workers_lost=lost,
    )


def live(store: Store) -> Live:
    """Throughput windows, the per-minute chart and worker counts."""
    day = store.throughput(store.now() - 86400)
    return _live(store, day, store.totals())


def overview(store: Store, infos: list[QueueInfo] | None = None) -> Overview:
    """The overview: :func:`live` plus every queue's counts and throughput
    (``infos``: the store's queues, when the caller has just read them)."""
    day = store.throughput(store.now() - 86400)
    totals = store.totals()
    summary = _live(store, day, totals)
    queues = []
    counts: dict[JobState, int] = {}
    for info in store.queues() if infos is None else infos:
        mine = [r for r in day if r.queue == info.name]
        mine_totals = [r for r in totals if r.queue == info.name]
        queues.append(
            QueueView(
                info.name, info.paused, dict(info.counts), _windows(mine, mine_totals, summary.now)
            )
        )
        for state, n in info.counts.items():
            counts[state] = counts.get(state, 0) + n
    return Overview(summary, queues, counts)


def known_names(store: Store, tasks: Iterable[str] = ()) -> tuple[list[str], list[str]]:
    """Queue and task names seen in the all-time totals (cheap), plus ``tasks``."""
    queues: set[str] = set()
    names: set[str] = set(tasks)
    for row in store.totals():
        queues.add(row.queue)
        names.add(row.task)
    return sorted(queues), sorted(names)


# -- jobs ------------------------------------------------------------------


def list_jobs(
    store: Store,
    *,
    queue: str | None = None,
    task: str | None = None,
    state: JobState | None = None,
    schedule: str | None = None,
    search: str | None = None,
    limit: int = 50,
    cursor: str | None = None,
    masking: bool = False,
) -> JobPage:
    """One page of jobs, newest first; empty filters mean any. ``masking``:
    for a reader shown a command's environment with its values hidden
    (:func:`masked`), whose search must not find a job by those values
    either (a page may then hold fewer jobs than ``limit``)."""
    query = JobQuery(
        queue=queue or None,
        task=task or None,
        state=state,
        schedule=schedule or None,
        search=search or None,
    )
    page = store.list_jobs(query, limit=limit, cursor=cursor or None)
    if not (masking and search):
        return page
    found = tuple(job for job in page.jobs if _found_when_masked(job, search))
    return JobPage(found, page.next_cursor)


def _found_when_masked(job: Job, search: str) -> bool:
    """Whether ``search`` is in ``job``'s call with its hidden values hidden,
    encoded as it was stored."""
    shown = shown_kwargs(job.task, job.kwargs)
    if shown is job.kwargs:  # nothing hidden: the store's match stands
        return True
    return search.encode() in _json.dumps_call(tuple(job.args), shown, cap=None)


def get_job(store: Store, job_id: str) -> Job:
    """One job by its id or a unique prefix of it (see :meth:`Store.resolve_job_id`),
    or :class:`JobNotFound`."""
    job = store.get_job(job_id) or store.get_job(store.resolve_job_id(job_id))
    if job is None:  # deleted in between
        raise JobNotFound(job_id)
    return job


@dataclass(frozen=True)
class JobView(Job):
    """A job as the API gives it: :class:`~rota.models.Job` with its retry
    policy read (every field, defaults included), or None for a stored
    policy this version cannot read."""

    retry: RetryPolicy | None = DEFAULT_POLICY  # type: ignore[assignment]  # (Job's is the text)


def job_view(job: Job) -> JobView:
    """``job`` with its retry policy read, for the API."""
    values = {name: getattr(job, name) for name in Job.__dataclass_fields__}
    return JobView(**values | {"retry": read_policy(job.retry)})


#: A job (or a job view) or a schedule view: what :func:`masked` takes.
Shown = TypeVar("Shown", bound=Job | ScheduleView)


def masked(item: Shown) -> Shown:
    """``item`` with the values of its command's environment hidden, the
    names kept (see :func:`rota.commands.shown_kwargs`): what pages show,
    and what the API gives a viewer."""
    return replace(item, kwargs=shown_kwargs(item.task, item.kwargs))


def current_error_only(job: Job) -> Job:
    """``job`` without the error of an earlier attempt: a succeeded job keeps
    its failed attempts in ``history`` but has no error of its own."""
    if job.state is JobState.SUCCEEDED and (job.error or job.traceback):
        return replace(job, error=None, traceback=None)
    return job


# -- queues and limits -----------------------------------------------------


def queues(store: Store) -> list[QueueInfo]:
    """Every queue with its counts by state."""
    return store.queues()


def limits(store: Store) -> list[LimitView]:
    """Every flow-control key with running/limit, rate, tokens and breaker state."""
    now = store.now()
    views = []
    for info in store.limits():
        if info.open_until is None:
            breaker = "closed"
        elif info.open_until > now:
            breaker = "open"
        else:
            breaker = "half-open"
        views.append(LimitView(**asdict(info), breaker=breaker))
    return views


# -- schedules -------------------------------------------------------------


def describe_trigger(trigger: Mapping[str, Any]) -> str:
    """The trigger in words, or its JSON when it cannot be read."""
    try:
        from rota.scheduling import trigger_from_json

        return trigger_from_json(trigger).describe()
    except Exception:  # an unknown or newer trigger type: show what is stored
        return _json.dumps(dict(trigger)).decode()


def schedules(store: Store) -> list[ScheduleView]:
    """Every schedule, with its trigger in words and its last job's state."""
    return _schedule_views(store, store.schedules())


def schedule(store: Store, name: str) -> ScheduleView:
    """Schedule ``name`` as :func:`schedules` shows it; NotFound if there is none."""
    found = store.get_schedule(name)
    if found is None:
        raise NotFound(f"schedule {name!r} not found")
    return _schedule_views(store, [found])[0]


def _schedule_views(store: Store, found: list[Schedule]) -> list[ScheduleView]:
    last_ids = [s.last_job_id for s in found if s.last_job_id]
    last_jobs = {job.id: job for job in store.get_jobs(last_ids) if job is not None}
    now = store.now()
    views = []
    for s in found:
        payload = _json.loads(s.payload) or {}
        args = payload.get("args", [])
        last = last_jobs.get(s.last_job_id) if s.last_job_id else None
        views.append(
            ScheduleView(
                name=s.name,
                task=s.task,
                trigger=s.trigger,
                description=describe_trigger(s.trigger),
                enabled=s.enabled,
                next_fire=s.next_fire,
                last_fire=s.last_fire,
                last_job_id=s.last_job_id,
                last_job_state=None if last is None else last.state,
                last_job_fire=None if last is None else last.fire_time,
                last_job_error=last.error if last and last.state is JobState.FAILED else None,
                args=args,
                kwargs=payload.get("kwargs", {}),
                misfire=s.misfire,
                grace=s.grace,
                overlap=s.overlap,
                jitter=s.jitter,
                skipped=s.skipped,
                job_options=shown_options(s.job_options),
                retries=options_retry_text(s.job_options),
                overdue=is_overdue(s, now),
                command=command_line_of(s.task, args),
                command_options=command_options_of(s.task, payload.get("kwargs")),
            )
        )
    return views


# -- workers ---------------------------------------------------------------


def workers(store: Store, lost_after: float = LOST_AFTER) -> list[WorkerView]:
    """Every worker, newest heartbeat first; those silent for over ``lost_after``
    seconds (store clock) are marked lost."""
    now = store.now()
    views = []
    for w in store.workers():
        age = max(0.0, now - w.heartbeat_at)
        views.append(WorkerView(**asdict(w), lost=age > lost_after, seconds_since_heartbeat=age))
    return views
