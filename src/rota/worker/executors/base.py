"""What every executor does: run claimed jobs in its slots and report each
result through ``on_done``, from one of its own threads."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING

from rota.models import ClaimedJob
from rota.worker.runner import Result
from rota.worker.turns import Claim

if TYPE_CHECKING:
    from rota.app import App


OnDone = Callable[[ClaimedJob, Result], None]
#: Whether a job handed to a slot may still start (False: its lease ran out
#: while it waited, and the job is dropped unrun).
MayStart = Callable[[ClaimedJob], bool]
MODES = ("threads", "processes", "async")


class Executor(ABC):
    """Runs jobs in ``size`` slots and reports each result through ``on_done``."""

    def __init__(self, app: App, size: int, on_done: OnDone) -> None:
        self.app = app
        self.size = size
        self.on_done = on_done
        self.may_start: MayStart = lambda job: True
        #: Whether the worker's jobs are short now (see rota.worker.ahead).
        self.short_jobs: Callable[[], bool] = lambda: False

    @abstractmethod
    def start(self, claim: Claim) -> None:
        """Start the slots, fed by calls of ``claim`` (see the module docstring)."""

    @abstractmethod
    def stop_claiming(self, timeout: float | None = None) -> None:
        """Claim no more; return once a claim under way has returned, or after
        ``timeout`` seconds (None: no limit; a claim may wait out a store
        outage)."""

    @abstractmethod
    def take_waiting(self) -> list[ClaimedJob]:
        """Take back the claimed jobs no slot has started (the worker releases
        them at shutdown)."""

    @abstractmethod
    def stop(self) -> None:
        """Stop the slots, and the jobs still running as far as this executor
        can (child processes killed, async tasks cancelled; a thread runs
        on): the worker releases those jobs once this returns."""

    def busy(self) -> int:
        """Slots occupied, including ones whose job timed out but has not returned
        and kept its slot (see :meth:`abandon`)."""
        return 0

    def abandon(self, job: ClaimedJob) -> bool:
        """Give the slot of ``job``, which timed out but cannot be stopped, to a
        fresh runner; True if done. The default: False (this executor stops its
        jobs at their timeout)."""
        return False

    def stuck(self) -> int:
        """Abandoned jobs still running on runners of their own."""
        return 0

    def cancel(self, job: ClaimedJob) -> None:
        """Stop the running ``job``, which was cancelled, as far as this executor
        can. The default: nothing (threads stop cooperatively, through
        ``current_job().cancelled``)."""
        return None


__all__ = ["MODES", "Executor", "MayStart", "OnDone"]
