"""The SQLite store: rota's embedded default.

One database file in WAL mode, shared by any number of processes on one
machine: the SQL engine (``rota.stores.sql``) on the SQLite dialect. Every
verb is one ``BEGIN IMMEDIATE`` transaction, so SQLite's single writer lock
makes each state change atomic. Claims and finishes are batched: one
transaction per batch, whatever its size.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from rota.models import ANY_HOST, ClaimedJob, HostScope
from rota.stores.base import Store
from rota.stores.sql.audit import Audit
from rota.stores.sql.jobs import Jobs
from rota.stores.sql.logs import Logs
from rota.stores.sql.reads import Reads
from rota.stores.sql.schedules import Schedules
from rota.stores.sql.steer import Steering
from rota.stores.sql.users import Users
from rota.stores.sqlite._conn import Connections


class SQLiteStore(Jobs, Reads, Steering, Schedules, Audit, Users, Logs, Connections, Store):
    """A :class:`~rota.stores.base.Store` on one SQLite file (``sqlite:///path``)."""

    kind = "sqlite"

    def now(self) -> float:
        return time.time()

    def claim(
        self,
        worker_id: str,
        queues: Sequence[str],
        limit: int,
        host: HostScope = ANY_HOST,
    ) -> list[ClaimedJob]:
        self._wake_ups().mark()  # a wake-up from here on ends this thread's next wait
        return super().claim(worker_id, queues, limit, host)

    def wait(self, queues: Sequence[str], timeout: float) -> None:
        """Block until a commit that may give work (in any process of this
        machine: see ``_wakeups``), until the next scheduled or parked job is
        due, or for ``timeout`` seconds."""
        with self._read() as tx:
            for query in ("next_due", "next_parked"):
                row = tx.execute(query).fetchone()
                if row and row[0] is not None:
                    timeout = min(timeout, max(0.0, row[0] - time.time()))
        self._wake_ups().wait(timeout)

    def purge_finished(self, older_than: float, limit: int = 10_000) -> int:
        """Delete finished jobs as every store does, then give the file's
        free pages back to the file system (:meth:`give_back_free_pages`):
        a worker's retention pass calls this every minute, so space freed by
        any purge or delete is given back within about a minute, 64 MiB a
        pass."""
        removed = super().purge_finished(older_than, limit)
        self.give_back_free_pages()
        return removed

    def purge_queue(self, queue: str) -> int:
        """Delete the queue's pending jobs as every store does, then give all
        the file's free pages back at once (an operator's purge may free far
        more than a retention pass gives back in a call)."""
        removed = super().purge_queue(queue)
        self.give_back_free_pages(most=None)
        return removed

    def interrupt_waits(self) -> None:
        self._wake_ups().interrupt()
