"""What a worker holds: each attempt it claimed, from the claim until the
store has taken its outcome (or, at shutdown, until it is released).

An attempt is keyed by its job and lease token (:func:`claim_of`): a worker
stalled past a lease may claim the job again while its stale attempt still
runs or waits for its report, and the two are tracked apart.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from rota.models import ClaimedJob

#: An attempt's key: its job's id and lease token.
Key = tuple[str, str]


def claim_of(job: ClaimedJob) -> Key:
    """The key of one attempt of ``job``."""
    return job.id, job.token


@dataclass(slots=True)
class Flight:
    """One claimed attempt and what the worker knows of its lease."""

    job: ClaimedJob
    claimed: float  # monotonic
    renewed: float  # monotonic: when the lease was last known to be held
    #: Whether a renewal said the job was cancelled.
    cancelled: bool = False
    #: Whether the attempt was told to stop (cancelled, or its lease lost).
    stopped: bool = False
    #: Whether a renewal found the lease gone (the store took the job back).
    lost: bool = False
    #: At shutdown, whether the task left running after the grace returned.
    returned: bool = False
    #: monotonic, once a slot started it (a job held for a slot has none)
    started: float | None = None


class Flights:
    """A worker's attempts by :func:`claim_of`, read and changed under ``lock``.

    - ``inflight``: claimed and not ended, running or held for a slot;
    - ``reporting``: ended, their outcome not yet taken by the store (their
      leases are renewed until it has, or a slow report would let them run
      again elsewhere);
    - ``releasing``: at shutdown, the ones left running after the grace
      (their leases are renewed while what runs them is stopped, then they
      are released).
    """

    __slots__ = ("inflight", "lock", "releasing", "reporting")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.inflight: dict[Key, Flight] = {}
        self.reporting: dict[Key, Flight] = {}
        self.releasing: dict[Key, Flight] = {}
