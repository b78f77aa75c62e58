"""Each host's level, held by the store, moved by what the worker processes see.

The level of a host is the concurrency override of its key
(``app.store.set_limit``): ``rota limits list`` and the dashboard's limits
view show it as ``running/level (set)``, and the store applies it at claim
time on every worker. The host's rate follows its level: below the ceiling
it is the host's own rate (the crawler's, or its robots.txt's Crawl-delay)
times level / ceiling, kept as the key's rate override
(``app.store.set_rate``), so a host that struggles gets fewer requests a
second, not only fewer at once. No override means the host runs at the ceiling
(``per_host``). A pause is the override 0 (the store holds every job of the
host) plus a resume job, sent to run when the pause ends, that sets the
level the host comes back at.

Each process reads the levels from the store at most once a second, and
again right before it writes one (only when it changes), so a decision
never lifts a pause set meanwhile by another process. Two processes that
decide at once write the same or neighbouring levels; the next decision
starts from what the store holds. The crawler owns the overrides of its
hosts' keys: a level set by hand is moved by the next change, except a
hold of 0, which no change moves (a throttle then sends no resume job).
The rate override is brought back in line with the level in force at the
host's next answer whenever the two disagree: after an operator changed
the level (``rota limits clear HOST`` gives a host at its ceiling its own
rate back), or the rate (one set by hand does not last), or a process
died between the two writes of a change.

The store has no read of one key's limits, so a read is of every key
(``store.limits()``): its cost grows with the number of keys the store
knows, once a second per worker process that is fetching.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable

from rota.app import App
from rota.crawl import adapt
from rota.crawl.adapt import Adaptive, Event, Health

__all__ = ["Pacer"]

log = logging.getLogger("rota.crawl")

#: Seconds a process trusts its copy of the levels.
_FRESH = 1.0

#: Sends the resume job of ``host``: ``resume(host, level, rate, delay,
#: started)``, ``started`` when this throttle paused a host that was not.
Resume = Callable[[str, int, "float | None", float, bool], None]


class Pacer:
    """Per-host levels for one crawler in one process."""

    def __init__(self, app: App, ceiling: int, config: Adaptive | None, resume: Resume) -> None:
        self._app = app
        self._ceiling = ceiling
        self._config = config or Adaptive()
        self._adaptive = config is not None
        self._resume = resume
        self._lock = threading.Lock()
        self._health: dict[str, Health] = {}
        self._levels: dict[str, int] = {}
        self._paced: dict[str, float] = {}  # the store's rate overrides, read with the levels
        self._rates: dict[str, float] = {}  # each host's own rate, as its fetches said
        self._read_at = -_FRESH

    def record(
        self, host: str, status: int | None, seconds: float, rate: float | None = None
    ) -> Event:
        """Take one response (``status`` None: none came) that took
        ``seconds``; move the host's level if it calls for it. ``rate`` is
        the host's own rate (fetches a second at the ceiling). A level that
        stays puts the rate override back in line with it when the two
        disagree. A throttle is :meth:`throttle`'s, not this method's."""
        with self._lock:
            self._know_rate(host, rate)
            health = self._health.get(host, Health())
            if status is not None:
                health = adapt.observe(health, seconds, self._config)
            event = adapt.classify(status, health, self._config)
            level = self._level(host)
            new, after = adapt.next_level(level, self._ceiling, event, health, self._config)
            if self._adaptive and new != level:
                # decided on a copy up to a second old: decide again on what
                # the store holds now, so a pause set meanwhile is never lifted
                level = self._level(host, fresh=True)
                new, after = adapt.next_level(level, self._ceiling, event, health, self._config)
            self._health[host] = after
            moves = self._adaptive and new != level
            astray = not moves and self._astray(host, level)
            if astray:  # seen on a copy up to a second old: look again at the store
                level = self._level(host, fresh=True)
                astray = self._astray(host, level)
        if moves:
            self._set(host, new, f"{event.value} response")
        elif astray:
            self._align(host, level)
        return event

    def throttle(self, host: str, retry_after: float | None, rate: float | None = None) -> float:
        """Pause ``host`` (it answered 429 or 503) for as long as it asked, or
        for a pause that doubles with each throttle in a row, never longer
        than ``max_pause`` (:func:`rota.crawl.adapt.pause_seconds`); returns
        the pause in seconds. The resume job brings it back at half its level
        (at its ceiling without adaptation). A host already paused stays so
        until the later of the two pauses' ends."""
        with self._lock:
            self._know_rate(host, rate)
            health = self._health.get(host, Health())
            level = self._level(host, fresh=True)
            new, health = adapt.next_level(
                level, self._ceiling, Event.THROTTLED, health, self._config
            )
            self._health[host] = health
            seconds = adapt.pause_seconds(retry_after, health.throttles, self._config)
        if level > 0:
            self._set(host, 0, f"throttled; paused for {seconds:.1f} s")
        back = new if self._adaptive and new > 0 else self._ceiling
        self._resume(host, back, self._rates.get(host), seconds, level > 0)
        return seconds

    def paused(self, host: str) -> bool:
        """Whether ``host`` is paused, as this process knows it: at once for
        a pause it set, within a second for one another process set."""
        with self._lock:
            return self._level(host) == 0

    def resume(self, host: str, level: int, rate: float | None = None) -> None:
        """End the pause of ``host`` at ``level`` (the resume job runs this;
        ``rate`` is the host's own rate, as the throttled fetch knew it)."""
        with self._lock:
            self._know_rate(host, rate)
        self._set(host, max(1, min(level, self._ceiling)), "pause over")

    def _know_rate(self, host: str, rate: float | None) -> None:
        if rate is not None:
            self._rates[host] = rate

    def _pace(self, own: float, level: int) -> float | None:
        """The rate override of a host at ``level`` whose own rate is
        ``own``: its share of it below the ceiling, None (its own) at it."""
        return None if level >= self._ceiling else own * max(level, 1) / self._ceiling

    def _astray(self, host: str, level: int) -> bool:
        """Whether the rate override of ``host``, as this process's copy has
        it, is not the one ``level`` implies (the lock is held). Unknown
        while the host's own rate is, and while it is paused (0: none of
        its fetches starts, whatever the rate)."""
        own = self._rates.get(host)
        if own is None or level <= 0:
            return False
        held, paced = self._paced.get(host), self._pace(own, level)
        if held is None or paced is None:
            return held is not paced
        return not math.isclose(held, paced, rel_tol=1e-9)

    def _align(self, host: str, level: int) -> None:
        """Set the rate override of ``host`` to what its ``level`` implies
        (its level stays as it is)."""
        paced = self._pace(self._rates[host], level)
        self._app.store.set_rate(host, paced)
        with self._lock:
            self._keep_rate(host, paced)
        pace = "its own rate" if paced is None else f"{paced:.3g} a second"
        log.info("host %s: rate back in line with its level %d: %s", host, level, pace)

    def _set(self, host: str, level: int, why: str) -> None:
        value = None if level >= self._ceiling else level
        self._app.store.set_limit(host, value)
        own = self._rates.get(host)
        paced = None
        if own is not None:  # else the rate stays as it is until a fetch tells it
            paced = self._pace(own, level)
            self._app.store.set_rate(host, paced)
        with self._lock:
            self._levels[host] = level
            if own is not None:
                self._keep_rate(host, paced)
        shown = "the ceiling" if value is None else str(level)
        pace = f", {paced:.3g} a second" if paced is not None else ""
        log.info("host %s: %s; at most %s fetch(es) at once%s", host, why, shown, pace)

    def _keep_rate(self, host: str, paced: float | None) -> None:
        """Note in this process's copy the rate override just written."""
        if paced is None:
            self._paced.pop(host, None)
        else:
            self._paced[host] = paced

    def _level(self, host: str, *, fresh: bool = False) -> int:
        """The level in force for ``host`` (the lock is held): from this
        process's copy of the store's overrides, read again when ``fresh``
        or when it is a second old."""
        now = time.monotonic()
        if fresh or now - self._read_at >= _FRESH:
            infos = self._app.store.limits()
            self._levels = {i.key: i.override for i in infos if i.override is not None}
            self._paced = {i.key: i.rate_override for i in infos if i.rate_override is not None}
            self._read_at = now
        return min(self._levels.get(host, self._ceiling), self._ceiling)
