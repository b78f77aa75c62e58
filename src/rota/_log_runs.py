"""The headings of a job's output, the same in the dashboard and the CLI.

A store keeps a job's output per attempt number, and a retry by hand
(``rota jobs retry``, the dashboard's Retry) counts the attempts from 1
again, so the chunks of attempt 1 may be those of two runs. The runs are
told apart by the history's ``requeued`` entries: a chunk written after a
requeue belongs to the run that the requeue began. The stores are left as
they are: a chunk's time is the worker's clock and a requeue's the store's,
so the split is as good as the worker's clock (the run after a requeue
starts only once a worker has claimed the job again).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rota.models import LogChunk

__all__ = ["LogHeadings"]


@dataclass(frozen=True, slots=True)
class _Requeue:
    at: float
    by: str | None


class LogHeadings:
    """Headings for a job's output read chunk by chunk in the order the store
    returns them (by attempt, then seq; page after page, as ``rota jobs logs
    --follow`` reads them): ``--- attempt 1 ---`` before an attempt's first
    chunk, and ``--- attempt 1, after requeue by ann at ... ---`` where an
    attempt's chunks go on after a requeue. ``when`` formats a time."""

    def __init__(self, history: Sequence[Mapping[str, Any]], when: Callable[[float], str]) -> None:
        requeues = []
        for entry in history:
            at = entry.get("at")
            if entry.get("event") == "requeued" and isinstance(at, int | float):
                by = entry.get("by")
                requeues.append(_Requeue(float(at), str(by) if by else None))
        self._requeues = sorted(requeues, key=lambda r: r.at)
        self._when = when
        self._shown: tuple[int, int] | None = None  # (attempt, run) of the last chunk
        self._runs: dict[int, int] = {}  # per attempt, the run of its latest chunk

    @property
    def requeued(self) -> bool:
        """Whether the job was requeued by hand: its output is in runs."""
        return bool(self._requeues)

    def _run(self, chunk: LogChunk) -> int:
        """How many requeues came before ``chunk``; never fewer than for an
        earlier chunk of its attempt (their order is the store's)."""
        after = sum(1 for r in self._requeues if r.at <= chunk.at)
        run = max(after, self._runs.get(chunk.attempt, 0))
        self._runs[chunk.attempt] = run
        return run

    def _text(self, attempt: int, run: int) -> str:
        if run == 0:
            return f"--- attempt {attempt} ---"
        return f"--- attempt {attempt}{self.requeue_note(run)} ---"

    def requeue_note(self, run: int | None = None) -> str:
        """``, after requeue by ann at ...``: what tells run ``run`` (by
        default the latest, after every requeue) from the first; "" for the
        first."""
        run = len(self._requeues) if run is None else run
        if run == 0:
            return ""
        requeue = self._requeues[run - 1]
        by = f" by {requeue.by}" if requeue.by else ""
        return f", after requeue{by} at {self._when(requeue.at)}"

    def heading(self, chunk: LogChunk) -> str | None:
        """The heading to show before ``chunk``, or None when it continues the
        chunk shown before it."""
        return self._heading(chunk.attempt, self._run(chunk))

    def _heading(self, attempt: int, run: int) -> str | None:
        if (attempt, run) == self._shown:
            return None
        self._shown = (attempt, run)
        return self._text(attempt, run)

    def in_runs(self, chunks: Iterable[LogChunk]) -> list[tuple[str | None, LogChunk]]:
        """A whole log, each chunk with the heading to show before it: the
        first run's attempts, then those after the first requeue, and so on
        (the store's order, by attempt, would put a first run's attempt 2
        after a later run's attempt 1)."""
        runs = [(self._run(chunk), chunk) for chunk in chunks]
        runs.sort(key=lambda pair: pair[0])  # (stable: by attempt, then seq, within a run)
        return [(self._heading(chunk.attempt, run), chunk) for run, chunk in runs]

    def latest_shown(self) -> int | None:
        """The attempt of the last heading shown, when it was of the latest
        run (output still to come continues it), else None."""
        if self._shown is None or self._shown[1] != len(self._requeues):
            return None
        return self._shown[0]
