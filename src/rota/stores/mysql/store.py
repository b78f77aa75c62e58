"""The MySQL / MariaDB store: rota on the MySQL-family server a team runs.

The SQL engine (``rota.stores.sql``) on the MySQL dialect, InnoDB tables in
one database per store. Transactions run at READ COMMITTED; claims lock the
rows they take with ``FOR UPDATE SKIP LOCKED``, so any number of workers claim
side by side; limit keys are rows locked by the transaction that admits or
frees through them; the database's clock is the store clock. Neither server
has LISTEN/NOTIFY: a transaction that makes work claimable bumps a counter
row as it commits, and idle workers look at that row every few milliseconds.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import MySQLdb

from rota.errors import InvalidArgument
from rota.models import EnqueueResult, NewJob
from rota.stores import _checks
from rota.stores.base import Store
from rota.stores.mysql._caller import caller_tx, in_store_session, savepoint
from rota.stores.mysql._conn import MySQLConnections
from rota.stores.mysql._tx import store_error
from rota.stores.sql.audit import Audit
from rota.stores.sql.jobs import Jobs
from rota.stores.sql.logs import Logs
from rota.stores.sql.reads import Reads
from rota.stores.sql.schedules import Schedules
from rota.stores.sql.steer import Steering
from rota.stores.sql.tx import Refused, Tx
from rota.stores.sql.users import Users

#: The URL options rota reads; the URL accepts no others. ``read_url`` names a
#: read replica for the app (see ``rota.stores.open_replica``).
_OPTIONS = ("pool_size", "wake_poll", "read_url")


class MySQLStore(Jobs, Reads, Steering, Schedules, Audit, Users, Logs, MySQLConnections, Store):
    """A :class:`~rota.stores.base.Store` on MySQL 8.0.17+ or MariaDB 10.6+
    (``mysql://user:pass@host:port/database``)."""

    kind = "mysql"
    orders_debug_queues = True
    pages_queues_apart = True
    #: When this store last folded wake-up rows (monotonic; see :meth:`_places`).
    _folded_at = -math.inf

    @classmethod
    def from_url(cls, url: str, *, create: bool = True, replica: bool = False) -> MySQLStore:
        """The store a ``mysql://`` URL names; its database is created if it
        does not exist (given the right to). ``create``: False refuses
        (:class:`StoreError`) a database without rota's tables rather than
        create it. ``replica``: a read-only view on a replica of the store's
        server (the URL names the replica), which runs no migrations."""
        parts = urlsplit(url)
        options = dict(parse_qsl(parts.query, keep_blank_values=True))
        unknown = sorted(set(options) - set(_OPTIONS))
        if unknown:
            raise InvalidArgument(
                f"unknown MySQL URL option(s) {', '.join(unknown)}: rota reads "
                f"{' and '.join(_OPTIONS)}"
            )
        pool_size = _bounded(options, "pool_size", 8.0, 1, 100)
        if not pool_size.is_integer():
            raise InvalidArgument("MySQL URL option pool_size must be a whole number")
        host, port = parts.hostname or "localhost", parts.port or 3306
        database = unquote(parts.path.lstrip("/"))
        connect = {
            "host": host,
            "port": port,
            "user": unquote(parts.username or "root"),
            "password": unquote(parts.password or ""),
            "database": database,
            "connect_timeout": 10,
        }
        return cls(
            connect,
            where=f"{host}:{port}/{database}" + (" (the read replica)" if replica else ""),
            pool_size=int(pool_size),
            wake_poll=_bounded(options, "wake_poll", 0.1, 0.005, 5.0),
            create=create,
            replica=replica,
        )

    def now(self) -> float:
        with self._read() as tx:
            return tx.now()

    def enqueue_in(self, connection: Any, jobs: Sequence[NewJob]) -> list[EnqueueResult]:
        """Store ``jobs`` in the caller's open transaction on ``connection``
        (a mysqlclient, PyMySQL or Connector/Python connection to this store's
        server, any database): they become visible to workers when it commits,
        and vanish if it rolls back. The transaction is left open, its session
        as it was (see
        :mod:`rota.stores.mysql._caller`)."""
        _checks.new_jobs(jobs)
        tx = caller_tx(connection)
        if not jobs:
            return []
        # The jobs' virtual times are taken in a transaction of the store's
        # own: the caller's holds no row other sends need (a queue's row, a
        # fair key's, the wake-up count) while it is open.
        vtimes = self._transact(lambda own: self._places(own, jobs))
        try:
            with in_store_session(tx, self._connect_args["database"]), savepoint(tx):
                results = self._enqueue(tx, jobs, vtimes)
                if tx.woken:
                    tx.execute("wake_at_commit")
        except MySQLdb.Error as exc:
            raise store_error(exc, self.where) from exc
        except Refused as refused:
            raise self._name_taken_id([job.id for job in jobs], refused) from None
        return results

    def _places(self, tx: Tx, jobs: Sequence[NewJob]) -> list[float]:
        """The jobs' virtual times; and, at most every :data:`_FOLD_EVERY`
        seconds, the wake-ups of earlier sends in callers' transactions,
        committed since, folded into the shared count (last, as any send
        bumps it: locked only for the commit), so that the rows idle
        workers count stay few however many such sends come."""
        vtimes = self._virtual_times(tx, jobs)
        if time.monotonic() - self._folded_at >= _FOLD_EVERY:
            self._folded_at = time.monotonic()
            _fold_wakes(tx, _FOLD_BATCH)
        return vtimes

    def purge_finished(self, older_than: float, limit: int = 10_000) -> int:
        removed = super().purge_finished(older_than, limit)
        self._transact(lambda tx: _fold_wakes(tx, limit))
        return removed

    def wait(self, queues: Sequence[str], timeout: float) -> None:
        """Block until a transaction that made work claimable commits (seen
        within ``wake_poll`` seconds), until the next scheduled or parked job
        is due, or for ``timeout`` seconds."""
        self._await_wake(timeout)


#: How often a process's sends in callers' transactions fold wake-up rows,
#: in seconds, and how many rows a fold takes at most.
_FOLD_EVERY = 1.0
_FOLD_BATCH = 10_000


def _fold_wakes(tx: Tx, limit: int) -> None:
    """Fold up to ``limit`` wake-up rows of committed sends into the shared
    count, which idle workers see unchanged."""
    ids = [row[0] for row in tx.execute("committed_wakes", (limit,)).fetchall()]
    if ids:
        tx.executemany("drop_wake", [(wake,) for wake in ids])
        tx.execute("add_wakes", (len(ids),))


def _bounded(options: dict[str, str], name: str, default: float, low: float, high: float) -> float:
    """URL option ``name`` as a number between ``low`` and ``high``."""
    raw = options.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise InvalidArgument(f"MySQL URL option {name} must be a number, not {raw!r}") from None
    if not low <= value <= high:
        raise InvalidArgument(
            f"MySQL URL option {name} must be between {low:g} and {high:g}, not {raw}"
        )
    return value
