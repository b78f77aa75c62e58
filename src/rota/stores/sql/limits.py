"""Flow-control bookkeeping of the SQL engine, inside one write transaction."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from rota import _json, flow
from rota.stores.sql.tx import Tx


@dataclass(slots=True)
class _KeyState:
    running: int = 0
    concurrency: int | None = None
    override: int | None = None
    rate: float | None = None
    burst: int | None = None
    tokens: float | None = None
    tokens_at: float | None = None
    failures: int = 0
    open_until: float | None = None
    probe: str | None = None
    inflight: int = 0  # running jobs with this breaker key
    rate_override: float | None = None  # set at run time; save() leaves it be


#: Jobs blocked by a busy key are parked at most this long; a freed slot
#: brings them back sooner.
PARK_SAFETY = 10.0
#: A ``freed`` count that unparks every job parked on the key.
UNPARK_ALL = 1_000_000


class Block(NamedTuple):
    """Why a job cannot start: ``key`` blocks it until at least ``until``."""

    key: str
    until: float


class LimitBook:
    """Reads each touched key once, decides admissions and outcomes, writes back once.

    ``limits`` values are the decoded ``limits`` column of a job:
    ``{"c": [[key, n]], "r": [[key, rate, burst]], "b": [[key, failures, cooldown]]}``,
    a breaker's entry ending with the error kinds it ignores when there are some.
    """

    def __init__(self, tx: Tx, now: float) -> None:
        self._tx = tx
        self.now = now
        self._keys: dict[str, _KeyState] = {}
        self._dirty: set[str] = set()
        self.blocked: dict[str, float] = {}  # key -> until when it stays blocked
        self.freed: Counter[str] = Counter()  # key -> parked jobs it may now let run

    def load(self, all_limits: Iterable[dict[str, Any] | None]) -> None:
        """Read every key of ``all_limits`` now, in key order. On a server
        database reading a key locks its row, so transactions that take the
        keys they will need in one order never deadlock over them."""
        keys = {
            key for limits in all_limits if limits for group in limits.values() for key, *_ in group
        }
        for key in sorted(keys - self._keys.keys()):
            self._get(key)

    def _get(self, key: str) -> _KeyState:
        state = self._keys.get(key)
        if state is None:
            row = self._tx.execute("limit_row", (key,)).fetchone()
            state = _KeyState(*row) if row else _KeyState()
            self._keys[key] = state
        return state

    def admit(self, limits: dict[str, Any], job_id: str) -> Block | None:
        """Take the job's slots and tokens if every key allows it and return
        None; else take nothing and return what blocks it (the key, and until
        when it surely stays blocked)."""
        buckets: dict[str, flow.Bucket] = {}
        for key, n in limits.get("c", ()):
            state = self._get(key)
            cap = state.override if state.override is not None else n
            if key in self.blocked or state.running >= cap:
                return self._block(key, self.now + PARK_SAFETY)
        for key, declared, burst in limits.get("r", ()):
            if key in self.blocked:
                return self._block(key, self.now)
            state = self._get(key)
            rate = declared if state.rate_override is None else state.rate_override
            old = None
            if state.tokens is not None and state.tokens_at is not None:
                old = flow.Bucket(state.tokens, state.tokens_at)
            bucket = flow.refill(old, rate, burst, self.now)
            taken = flow.take(bucket)
            if taken is None:
                return self._block(key, self.now + (1.0 - bucket.tokens) / rate)
            buckets[key] = taken
        for key, threshold, *_ in limits.get("b", ()):
            state = self._get(key)
            if key in self.blocked or self._breaker_room(state, threshold) == 0:
                # a cooling breaker may pass at open_until; else a finish frees room
                until = self.now + PARK_SAFETY
                if state.open_until is not None and self.now < state.open_until:
                    until = state.open_until
                return self._block(key, until)
        self._apply_admission(limits, buckets, job_id)
        return None

    def settle(self, key: str) -> None:
        """Bring ``key``'s bucket up to now at the rate in force, before that
        rate changes: the time since its last take is credited at the old rate."""
        state = self._get(key)
        rate = state.rate if state.rate_override is None else state.rate_override
        if state.tokens is None or state.tokens_at is None or rate is None or not state.burst:
            return  # no bucket yet: it starts full whatever the rate
        old = flow.Bucket(state.tokens, state.tokens_at)
        bucket = flow.refill(old, rate, state.burst, self.now)
        state.tokens, state.tokens_at = bucket.tokens, bucket.at
        self._dirty.add(key)

    def _breaker_room(self, state: _KeyState, threshold: int) -> int:
        return flow.breaker_room(
            state.failures,
            state.open_until,
            state.inflight,
            state.probe is not None,
            threshold,
            self.now,
        )

    def _block(self, key: str, until: float) -> Block:
        """Record that ``key`` blocks until ``until`` (the first reason found wins)."""
        until = self.blocked.setdefault(key, until)
        return Block(key, until)

    def _apply_admission(
        self, limits: dict[str, Any], buckets: dict[str, flow.Bucket], job_id: str
    ) -> None:
        for key, n in limits.get("c", ()):
            state = self._get(key)
            state.running += 1
            state.concurrency = n
            self._dirty.add(key)
        for key, rate, burst in limits.get("r", ()):
            state = self._get(key)
            state.rate, state.burst = rate, burst
            state.tokens, state.tokens_at = buckets[key].tokens, buckets[key].at
            self._dirty.add(key)
        for key, *_ in limits.get("b", ()):
            state = self._get(key)
            state.inflight += 1
            if state.open_until is not None:
                state.probe = job_id
            self._dirty.add(key)

    def release(
        self, limits: dict[str, Any], job_id: str, ok: bool | None, kinds: Sequence[str] = ()
    ) -> None:
        """Free the job's slots; with ``ok`` not None, count the outcome on its
        breakers, but a failure on an error of ``kinds`` none that ignores one of them."""
        for key, _n in limits.get("c", ()):
            state = self._get(key)
            state.running = max(0, state.running - 1)
            self.freed[key] += 1
            self._dirty.add(key)
        for key, threshold, cooldown, *ignore in limits.get("b", ()):
            state = self._get(key)
            state.inflight = max(0, state.inflight - 1)
            if state.probe == job_id:
                state.probe = None
            was_open_until = state.open_until
            if ok is not None and not (ok is False and ignore and ignored(ignore[0], kinds)):
                state.failures, state.open_until = flow.breaker_after(
                    state.failures, state.open_until, ok, threshold, cooldown, self.now
                )
            if state.open_until is not None and state.open_until != was_open_until:
                # a cooldown began: a claim parks its jobs again until it ends
                self.freed[key] += UNPARK_ALL
            else:  # as many parked jobs come back as may start now
                self.freed[key] += self._breaker_room(state, threshold)
            self._dirty.add(key)

    def save(self) -> None:
        """Write every changed key back."""
        rows = []
        for key in self._dirty:
            s = self._keys[key]
            rows.append(
                (
                    key,
                    s.running,
                    s.concurrency,
                    s.override,
                    s.rate,
                    s.burst,
                    s.tokens,
                    s.tokens_at,
                    s.failures,
                    s.open_until,
                    s.probe,
                    s.inflight,
                )
            )
        if rows:
            self._tx.executemany("save_limit_row", rows)
        self._dirty.clear()


def decode(raw: bytes | None) -> dict[str, Any] | None:
    """The ``limits`` column, decoded (None when the job has no limit keys)."""
    return _json.loads(raw) if raw else None


def ignored(ignore: Sequence[str], kinds: Sequence[str]) -> bool:
    """Whether a failure on an error of ``kinds`` is one a breaker ignoring
    ``ignore`` does not count."""
    return any(kind in ignore for kind in kinds)
