"""Golden cases of the flow-control rules: one table, run against rota.flow
(the Python rules, tests/unit/test_flow.py), against the same rules in the
Redis store's Lua (tests/conformance/test_lua_flow.py), and, for the breaker's
room, against every store (tests/conformance/test_breaker_threshold.py), so
that the implementations cannot drift apart.

Every case is plain data: inputs and expected outputs. The replay functions
below say how a case is read, once for every implementation of :class:`Rules`.

Times in :data:`BREAKER_CASES` are relative to the store's clock: ``open_in``
is ``open_until - now`` (None: closed), never 0 so that a case holds for a
store whose clock moves while it runs. The bucket and breaker runs use
absolute times (they only run against the rules themselves), chosen with
rates so that every expected value is exact in binary floating point.

Concurrency slots have no rule of their own to pin here: a key admits a job
while its running count is below its limit (or its override), which the
conformance suite checks on every store (tests/conformance/test_limits.py).
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

from rota.flow import Bucket


class Rules(Protocol):
    """The flow-control rules, with the signatures of :mod:`rota.flow`."""

    def refill(self, bucket: Bucket | None, rate: float, burst: int, now: float) -> Bucket: ...

    def take(self, bucket: Bucket) -> Bucket | None: ...

    def breaker_room(
        self,
        failures: int,
        open_until: float | None,
        inflight: int,
        probe_running: bool,
        threshold: int,
        now: float,
    ) -> int: ...

    def breaker_after(
        self,
        failures: int,
        open_until: float | None,
        ok: bool,
        threshold: int,
        cooldown: float,
        now: float,
    ) -> tuple[int, float | None]: ...


# -- breaker room at one moment (also run against every store) -------------------------


class BreakerCase(NamedTuple):
    """A breaker's state and how many jobs with its key a claim may start."""

    name: str
    threshold: int
    failures: int
    open_in: float | None
    inflight: int
    probe_running: bool
    room: int


BREAKER_CASES: tuple[BreakerCase, ...] = (
    BreakerCase("closed, nothing on record", 3, 0, None, 0, False, 3),
    BreakerCase("closed, one failure", 3, 1, None, 0, False, 2),
    BreakerCase("closed, two failures", 3, 2, None, 0, False, 1),
    BreakerCase("closed, jobs in flight", 3, 0, None, 2, False, 1),
    BreakerCase("closed, failures and jobs in flight", 3, 1, None, 1, False, 1),
    BreakerCase("closed, its room in flight", 3, 2, None, 1, False, 0),
    BreakerCase("closed, more in flight than its threshold", 3, 0, None, 5, False, 0),
    BreakerCase("closed, failures past a lower threshold", 2, 4, None, 0, False, 0),
    BreakerCase("closed, threshold of one", 1, 0, None, 0, False, 1),
    BreakerCase("closed, a large threshold", 50, 10, None, 4, False, 36),
    BreakerCase("open, cooling down", 3, 3, 60.0, 0, False, 0),
    BreakerCase("open, cooling down, a straggler in flight", 3, 3, 60.0, 1, False, 0),
    BreakerCase("half-open", 3, 3, -1.0, 0, False, 1),
    BreakerCase("half-open, a straggler in flight", 3, 4, -1.0, 1, False, 1),
    BreakerCase("half-open, its probe running", 3, 3, -1.0, 1, True, 0),
)


def breaker_room_of(rules: Rules, case: BreakerCase, now: float) -> int:
    """The room ``rules`` give the breaker of ``case`` at ``now``."""
    open_until = None if case.open_in is None else now + case.open_in
    return rules.breaker_room(
        case.failures, open_until, case.inflight, case.probe_running, case.threshold, now
    )


# -- token buckets, call after call ------------------------------------------------------


class BucketStep(NamedTuple):
    """At the store's clock ``now``: refill, then (with ``take``) take one
    token; the bucket must then hold ``tokens`` as of ``at``, and ``taken``
    says whether the take succeeded (False when none was tried)."""

    now: float
    take: bool
    tokens: float
    at: float
    taken: bool


class BucketRun(NamedTuple):
    """A bucket of ``rate`` tokens/s and ``burst``, starting with ``tokens``
    as of ``at`` (both None: never seen before), through its ``steps``."""

    name: str
    rate: float
    burst: int
    tokens: float | None
    at: float | None
    steps: tuple[BucketStep, ...]


def _s(now: float, take: bool, tokens: float, at: float, taken: bool = False) -> BucketStep:
    return BucketStep(now, take, tokens, at, taken)


BUCKET_RUNS: tuple[BucketRun, ...] = (
    BucketRun("a new bucket starts full", 2.0, 5, None, None, (_s(100.0, False, 5.0, 100.0),)),
    BucketRun(
        "a new bucket gives its burst at once, then refuses",
        2.0,
        3,
        None,
        None,
        (
            _s(100.0, True, 2.0, 100.0, True),
            _s(100.0, True, 1.0, 100.0, True),
            _s(100.0, True, 0.0, 100.0, True),
            _s(100.0, True, 0.0, 100.0),
        ),
    ),
    BucketRun(
        "refill adds rate times the time elapsed",
        2.0,
        5,
        0.0,
        100.0,
        (_s(101.0, False, 2.0, 101.0), _s(101.25, False, 2.5, 101.25)),
    ),
    BucketRun(
        "refill stops at the burst",
        2.0,
        5,
        0.0,
        100.0,
        (_s(1000.0, False, 5.0, 1000.0), _s(1001.0, True, 4.0, 1001.0, True)),
    ),
    BucketRun(
        "a clock standing still adds nothing",
        4.0,
        3,
        1.5,
        10.0,
        (_s(10.0, True, 0.5, 10.0, True), _s(10.0, True, 0.5, 10.0)),
    ),
    BucketRun(
        "exactly one token is taken, a little less is refused",
        1.0,
        5,
        0.9990234375,
        7.0,
        (_s(7.0, True, 0.9990234375, 7.0), _s(7.0009765625, True, 0.0, 7.0009765625, True)),
    ),
    BucketRun(
        "a partly refilled token becomes takeable on time",
        2.0,
        1,
        0.5,
        10.0,
        (_s(10.125, True, 0.75, 10.125), _s(10.25, True, 0.0, 10.25, True)),
    ),
    BucketRun(
        "a slow rate",
        0.5,
        1,
        0.0,
        0.0,
        (
            _s(1.0, True, 0.5, 1.0),
            _s(2.0, True, 0.0, 2.0, True),
            _s(2.0, True, 0.0, 2.0),
            _s(4.0, True, 0.0, 4.0, True),
        ),
    ),
    BucketRun(
        "a clock stepping back credits nothing and keeps the bucket's time",
        1.0,
        10,
        0.0,
        100.0,
        (_s(95.0, False, 0.0, 100.0), _s(105.0, False, 5.0, 105.0)),
    ),
    BucketRun(
        "a clock stepping back does not credit an interval twice",
        2.0,
        100,
        0.0,
        100.0,
        (
            _s(50.0, True, 0.0, 100.0),
            _s(100.5, True, 0.0, 100.5, True),
            _s(100.5, True, 0.0, 100.5),
        ),
    ),
    BucketRun(
        "tokens are taken while the clock is back, at the bucket's time",
        1.0,
        10,
        4.0,
        100.0,
        (
            _s(100.0, True, 3.0, 100.0, True),
            _s(98.0, True, 2.0, 100.0, True),
            _s(99.0, False, 2.0, 100.0),
            _s(102.0, False, 4.0, 102.0),
        ),
    ),
    BucketRun(
        "a full bucket stays at its burst across a step back",
        1.0,
        5,
        5.0,
        100.0,
        (_s(90.0, False, 5.0, 100.0), _s(200.0, False, 5.0, 200.0)),
    ),
    BucketRun(
        "a bucket over a lowered burst is cut to it, even with the clock back",
        1.0,
        5,
        8.0,
        100.0,
        (_s(99.0, False, 5.0, 100.0), _s(101.0, True, 4.0, 101.0, True)),
    ),
)


def replay_bucket(rules: Rules, run: BucketRun) -> list[BucketStep]:
    """The steps of ``run`` as ``rules`` play them (equal to ``run.steps`` when they agree)."""
    bucket = None if run.tokens is None or run.at is None else Bucket(run.tokens, run.at)
    seen: list[BucketStep] = []
    for step in run.steps:
        bucket = rules.refill(bucket, run.rate, run.burst, step.now)
        taken = rules.take(bucket) if step.take else None
        bucket = bucket if taken is None else taken
        seen.append(BucketStep(step.now, step.take, bucket.tokens, bucket.at, taken is not None))
    return seen


# -- circuit breakers, outcome after outcome ----------------------------------------------


class BreakerStep(NamedTuple):
    """At ``now``: an attempt ends (``ok``; None: none ends, time only
    passes); the breaker must then be at ``failures`` and ``open_until``
    (None: closed), and with ``inflight`` jobs running (one of them its probe
    with ``probe_running``) have ``room`` for that many more."""

    now: float
    ok: bool | None
    inflight: int
    probe_running: bool
    failures: int
    open_until: float | None
    room: int


class BreakerRun(NamedTuple):
    """A breaker of ``threshold`` failures and ``cooldown`` s, starting at
    ``failures`` and ``open_until``, through its ``steps``."""

    name: str
    threshold: int
    cooldown: float
    failures: int
    open_until: float | None
    steps: tuple[BreakerStep, ...]


def _b(
    now: float,
    ok: bool | None,
    failures: int,
    open_until: float | None,
    room: int,
    inflight: int = 0,
    probe_running: bool = False,
) -> BreakerStep:
    return BreakerStep(now, ok, inflight, probe_running, failures, open_until, room)


BREAKER_RUNS: tuple[BreakerRun, ...] = (
    BreakerRun(
        "closed, open, half-open, closed again",
        3,
        10.0,
        0,
        None,
        (
            _b(50.0, None, 0, None, 3),
            _b(50.0, False, 1, None, 2),
            _b(51.0, False, 2, None, 1),
            _b(52.0, False, 3, 62.0, 0),
            _b(61.5, None, 3, 62.0, 0),
            _b(62.0, None, 3, 62.0, 1),
            _b(62.0, None, 3, 62.0, 0, inflight=1, probe_running=True),
            _b(1e9, None, 3, 62.0, 0, inflight=1, probe_running=True),
            _b(63.0, True, 0, None, 3),
        ),
    ),
    BreakerRun(
        "a failed probe reopens it for another cooldown",
        2,
        5.0,
        2,
        100.0,
        (
            _b(99.0, None, 2, 100.0, 0),
            _b(100.0, None, 2, 100.0, 1),
            _b(101.0, False, 3, 106.0, 0),
            _b(105.5, None, 3, 106.0, 0),
            _b(106.0, None, 3, 106.0, 1),
        ),
    ),
    BreakerRun(
        "a success starts the count over",
        3,
        10.0,
        0,
        None,
        (
            _b(1.0, False, 1, None, 2),
            _b(2.0, False, 2, None, 1),
            _b(3.0, True, 0, None, 3),
            _b(4.0, False, 1, None, 2),
        ),
    ),
    BreakerRun(
        "a threshold of one opens on the first failure",
        1,
        5.0,
        0,
        None,
        (_b(1.0, None, 0, None, 1), _b(1.0, False, 1, 6.0, 0), _b(6.0, None, 1, 6.0, 1)),
    ),
    BreakerRun(
        "jobs in flight take room while it is closed",
        3,
        10.0,
        0,
        None,
        (
            _b(0.0, None, 0, None, 1, inflight=2),
            _b(0.0, False, 1, None, 1, inflight=1),
            _b(0.0, False, 2, None, 1),
        ),
    ),
    BreakerRun(
        "a straggler failing while it cools down starts the cooldown again",
        2,
        10.0,
        2,
        20.0,
        (
            _b(15.0, None, 2, 20.0, 0, inflight=1),
            _b(15.0, False, 3, 25.0, 0),
            _b(20.0, None, 3, 25.0, 0),
            _b(25.0, None, 3, 25.0, 1),
        ),
    ),
    BreakerRun(
        "a straggler succeeding while it cools down closes it",
        2,
        10.0,
        2,
        20.0,
        (_b(15.0, True, 0, None, 2),),
    ),
    BreakerRun(
        "failures past a lowered threshold open it on the next failure",
        2,
        10.0,
        4,
        None,
        (_b(0.0, None, 4, None, 0), _b(1.0, False, 5, 11.0, 0)),
    ),
)


def replay_breaker(rules: Rules, run: BreakerRun) -> list[BreakerStep]:
    """The steps of ``run`` as ``rules`` play them (equal to ``run.steps`` when they agree)."""
    failures, open_until = run.failures, run.open_until
    seen: list[BreakerStep] = []
    for step in run.steps:
        if step.ok is not None:
            failures, open_until = rules.breaker_after(
                failures, open_until, step.ok, run.threshold, run.cooldown, step.now
            )
        room = rules.breaker_room(
            failures, open_until, step.inflight, step.probe_running, run.threshold, step.now
        )
        seen.append(step._replace(failures=failures, open_until=open_until, room=room))
    return seen
