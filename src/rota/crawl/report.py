"""Where a crawl stands, per host, read from the store's inspection verbs.

Nothing is counted on the side: every figure is read from what the
crawl's jobs and the store's limit keys already hold.

- which crawls exist: crawlers declared on the app, and task names in the
  store's all-time totals that come in a crawler's pair ``NAME.fetch`` and
  ``NAME.robots``;
- fetches, all time and per minute: the store's attempt counts of the
  ``NAME.fetch`` task (``totals()``, ``throughput()``);
- per host: the newest :data:`SAMPLE` fetch jobs of each state (queued,
  scheduled, running, succeeded, failed; ``list_jobs`` by task and state),
  grouped by their URL's host: answers by kind from their results, failed
  attempts by kind from their history (:mod:`rota.crawl.outcomes`), queue
  depth from the pending ones. A state with more jobs than that is
  marked ``sampled``, and its figures are of its newest jobs only;
- the host's level, rate and breaker: its limit key (``limits()``): the
  level is the concurrency in force, the override the crawler set
  (:mod:`rota.crawl.pacing`); a pause is the override 0 until its
  ``NAME.resume`` job runs;
- robots.txt: the newest ``NAME.robots`` job of each origin.

The work is bounded: a fixed number of pages of ``list_jobs`` (at most
1,000 jobs each), plus ``limits()``, ``totals()`` and one hour of
``throughput()``, as the other dashboard pages read.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from rota.crawl import outcomes
from rota.crawl.jobs import CrawlJobs
from rota.crawl.robots import Rules, agent_token
from rota.crawl.settings import Settings
from rota.models import Job, JobQuery, JobState, LimitInfo, MinuteStats
from rota.windows import window_totals

if TYPE_CHECKING:
    from rota.app import App
    from rota.stores.base import Store

__all__ = [
    "SAMPLE",
    "CrawlReport",
    "CrawlSummary",
    "HostRow",
    "RobotsStatus",
    "crawl_names",
    "declared",
    "report",
    "robots_status",
    "summaries",
]

#: The most jobs of one state (and task) read for one report.
SAMPLE = 2000
#: The states whose newest fetch jobs are read.
_SAMPLED = (
    JobState.QUEUED,
    JobState.SCHEDULED,
    JobState.RUNNING,
    JobState.SUCCEEDED,
    JobState.FAILED,
)
#: Minutes of per-minute fetch counts a report carries.
MINUTES = 60


@dataclass(frozen=True, slots=True)
class RobotsStatus:
    """An origin's robots.txt as its newest robots job left it.

    ``state``: ``fetched`` (rules in force), ``allows`` (no rules: the file
    is missing or empty), ``disallow-all`` (``/`` is disallowed to the
    crawler), ``waiting`` (being fetched, or tried again after an
    unreachable answer: nothing of the origin is fetched meanwhile),
    ``failed`` (its retries ran out) or ``unknown`` (no robots job seen).
    ``status`` is the file's HTTP status; ``fetched_at`` when it was read;
    ``error`` the last failed attempt's error."""

    state: str = "unknown"
    status: int | None = None
    fetched_at: float | None = None
    job: str | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class HostRow:
    """One host of a crawl (its politeness key, ``host:port`` as in its URLs)."""

    host: str
    #: Fetch jobs that got an answer (2xx, 3xx, 4xx) and succeeded.
    fetched: int = 0
    #: Succeeded fetch jobs by answer kind (see :mod:`rota.crawl.outcomes`).
    answers: dict[str, int] = field(default_factory=dict)
    #: Failed attempts by kind, plus ``robots-disallowed`` pages.
    errors: dict[str, int] = field(default_factory=dict)
    #: Fetch jobs waiting to run: due (``queued``) and not yet due or
    #: waiting for a retry (``scheduled``).
    queued: int = 0
    scheduled: int = 0
    running: int = 0
    #: At most this many fetches of the host at once now (None: the store
    #: holds no key: none claimed yet, or one idle long enough for the
    #: retention pass to drop it, as its state was a new key's).
    level: int | None = None
    #: The crawler's ``per_host`` (None when the crawler is not declared here).
    ceiling: int | None = None
    #: The override the crawler set on the host's key (None: at the ceiling).
    override: int | None = None
    #: Fetches a second in force now: the crawler's adapted rate, else its own.
    rate: float | None = None
    burst: int | None = None
    #: When the host's pause ends (its resume job's run time), if paused.
    paused_until: float | None = None
    breaker_open_until: float | None = None
    robots: RobotsStatus = field(default_factory=RobotsStatus)

    @property
    def paused(self) -> bool:
        """Whether the store holds every fetch of the host (level 0)."""
        return self.override == 0


@dataclass(frozen=True, slots=True)
class CrawlSummary:
    """A crawl in the list of crawls: its fetch attempts, all time and lately."""

    name: str
    fetch_task: str
    queues: list[str]
    declared: bool
    succeeded: int
    failed_attempts: int
    last_hour: int
    last_5_min: int


@dataclass(frozen=True, slots=True)
class CrawlReport:
    """A crawl: its summary, its hosts, and its fetches per minute."""

    summary: CrawlSummary
    now: float
    hosts: list[HostRow]
    #: Per-minute counts of the fetch task over the last :data:`MINUTES`.
    minutes: list[MinuteStats]
    #: States whose newest :data:`SAMPLE` jobs were read, not all of them.
    sampled: list[str]
    #: How many jobs of each state were read at most.
    sample: int


def declared(app: App) -> dict[str, Settings]:
    """The crawlers declared on ``app``, by name, with their settings."""
    found: dict[str, Settings] = {}
    for name, task in app.tasks.items():
        owner = getattr(task.fn, "__self__", None)
        if isinstance(owner, CrawlJobs) and name == f"{owner.settings.name}.fetch":
            found[owner.settings.name] = owner.settings
    return found


def crawl_names(task_names: set[str]) -> list[str]:
    """Crawl names among task names: each ``NAME`` with ``NAME.fetch`` and
    ``NAME.robots`` both present."""
    return sorted(
        name[: -len(".fetch")]
        for name in task_names
        if name.endswith(".fetch") and name[: -len(".fetch")] + ".robots" in task_names
    )


def summaries(app: App, store: Store) -> list[CrawlSummary]:
    """Every crawl the app declares or the store has fetch jobs of."""
    return _summaries(app, store, store.totals(), store.throughput(store.now() - 3600))


def report(app: App, store: Store, name: str) -> CrawlReport | None:
    """The report of crawl ``name``, or None when there is no such crawl."""
    now = store.now()
    hour = store.throughput(now - MINUTES * 60)
    summary = next(
        (s for s in _summaries(app, store, store.totals(), hour) if s.name == name), None
    )
    if summary is None:
        return None
    settings = declared(app).get(name)
    jobs, sampled = _read_fetches(store, summary.fetch_task)
    rows = _HostBook(settings.per_host if settings else None)
    for state, found in jobs.items():
        for job in found:
            rows.add_fetch(state, job)
    agent = settings.agent if settings else agent_token("*")
    for job in _newest_per_origin(store, f"{name}.robots"):
        rows.add_robots(job, agent)
    for state in (JobState.QUEUED, JobState.SCHEDULED):
        for job in _read(store, f"{name}.resume", state)[0]:
            rows.add_resume(job)
    hosts = rows.rows({info.key: info for info in store.limits()})
    minutes = [m for m in hour if m.task == summary.fetch_task]
    return CrawlReport(summary, now, hosts, minutes, sampled, SAMPLE)


def _summaries(
    app: App, store: Store, totals: list[MinuteStats], hour: list[MinuteStats]
) -> list[CrawlSummary]:
    mine = declared(app)
    names = set(mine) | set(crawl_names({row.task for row in totals} | set(app.tasks)))
    now = store.now()
    found = []
    for name in sorted(names):
        task = f"{name}.fetch"
        all_time = [r for r in totals if r.task == task]
        recent = [r for r in hour if r.task == task]
        queues = {r.queue for r in all_time}
        if name in mine:
            queues.add(mine[name].queue)
        found.append(
            CrawlSummary(
                name=name,
                fetch_task=task,
                queues=sorted(queues),
                declared=name in mine,
                succeeded=sum(r.succeeded for r in all_time),
                failed_attempts=sum(r.failed for r in all_time),
                last_hour=window_totals(recent, now - 3600).succeeded,
                last_5_min=window_totals(recent, now - 300).succeeded,
            )
        )
    return found


def _read(store: Store, task: str, state: JobState | None) -> tuple[list[Job], bool]:
    """The newest :data:`SAMPLE` jobs of ``task`` in ``state``, and whether
    there were more."""
    jobs: list[Job] = []
    cursor: str | None = None
    while len(jobs) < SAMPLE:
        query = JobQuery(task=task, state=state)
        page = store.list_jobs(query, limit=min(1000, SAMPLE - len(jobs)), cursor=cursor)
        jobs.extend(page.jobs)
        cursor = page.next_cursor
        if cursor is None:
            return jobs, False
    return jobs, True


def _read_fetches(store: Store, task: str) -> tuple[dict[JobState, list[Job]], list[str]]:
    jobs: dict[JobState, list[Job]] = {}
    sampled = []
    for state in _SAMPLED:
        jobs[state], more = _read(store, task, state)
        if more:
            sampled.append(state.value)
    return jobs, sampled


def _newest_per_origin(store: Store, task: str) -> list[Job]:
    """The newest robots job of each origin (jobs come newest first)."""
    seen: dict[str, Job] = {}
    for job in _read(store, task, None)[0]:
        if job.args and isinstance(job.args[0], str):
            seen.setdefault(job.args[0], job)
    return list(seen.values())


def _host(url: object) -> str | None:
    """The politeness key of a job's URL (as ``urls.host_key``), or None."""
    if not isinstance(url, str):
        return None
    return urlsplit(url).netloc or None


def robots_status(job: Job, agent: str) -> RobotsStatus:
    """What the robots job ``job`` says of its origin's robots.txt."""
    error = job.error
    if job.state is JobState.SUCCEEDED and isinstance(job.result, dict):
        status = job.result.get("status")
        code = status if isinstance(status, int) else None
        rules = Rules.from_result(job.result, agent) if code is not None else None
        if rules is None or rules.parsed is None:
            state = "allows"
        elif not rules.allows(f"{job.args[0]}/"):
            state = "disallow-all"
        else:
            state = "fetched"
        return RobotsStatus(state, code, job.finished_at, job.id)
    state = "failed" if job.state in (JobState.FAILED, JobState.CANCELLED) else "waiting"
    return RobotsStatus(state, None, None, job.id, error)


class _HostBook:
    """Figures per host, gathered job by job."""

    def __init__(self, ceiling: int | None) -> None:
        self._ceiling = ceiling
        self._answers: dict[str, Counter[str]] = {}
        self._errors: dict[str, Counter[str]] = {}
        self._pending: dict[str, Counter[JobState]] = {}
        self._robots: dict[str, RobotsStatus] = {}
        self._paused_until: dict[str, float] = {}

    def _of(self, host: str) -> None:
        self._answers.setdefault(host, Counter())
        self._errors.setdefault(host, Counter())
        self._pending.setdefault(host, Counter())

    def add_fetch(self, state: JobState, job: Job) -> None:
        host = _host(job.args[0] if job.args else None)
        if host is None:
            return
        self._of(host)
        self._errors[host].update(outcomes.attempt_kinds(job.history))
        if state is JobState.SUCCEEDED:
            kind = outcomes.answer_kind(job.result)
            if kind == "robots-disallowed":
                self._errors[host][kind] += 1
            elif kind is not None:
                self._answers[host][kind] += 1
        elif state is not JobState.FAILED:
            self._pending[host][state] += 1

    def add_robots(self, job: Job, agent: str) -> None:
        host = _host(job.args[0] if job.args else None)
        if host is not None:
            self._of(host)
            self._robots[host] = robots_status(job, agent)

    def add_resume(self, job: Job) -> None:
        host = job.args[0] if job.args else None
        if isinstance(host, str):
            self._paused_until[host] = job.run_at

    def rows(self, limits: dict[str, LimitInfo]) -> list[HostRow]:
        found = []
        for host in sorted(self._answers):
            info = limits.get(host)
            answers, errors, pending = self._answers[host], self._errors[host], self._pending[host]
            override = info.override if info else None
            found.append(
                HostRow(
                    host=host,
                    fetched=sum(answers.values()),
                    answers=dict(answers),
                    errors=dict(errors),
                    queued=pending[JobState.QUEUED],
                    scheduled=pending[JobState.SCHEDULED],
                    running=info.running if info else pending[JobState.RUNNING],
                    level=info.concurrency if info else None,
                    ceiling=self._ceiling,
                    override=override,
                    rate=info.rate_in_force if info else None,
                    burst=info.burst if info else None,
                    paused_until=self._paused_until.get(host) if override == 0 else None,
                    breaker_open_until=info.open_until if info else None,
                    robots=self._robots.get(host, RobotsStatus()),
                )
            )
        return found
