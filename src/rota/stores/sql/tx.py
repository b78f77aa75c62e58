"""The connection the SQL engine talks to: named queries, the store clock."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

from rota.errors import StoreError


class Refused(StoreError):
    """The database refused a row for one of its constraints (the
    transaction was rolled back)."""


def log_run_again(log: logging.Logger, where: str, why: object, attempt: int) -> None:
    """Log that a transaction of the store at ``where`` runs again after the
    server aborted it (``why``: a deadlock, a lock wait, a serialization
    conflict): at debug level, as a warning from its third attempt on."""
    level = logging.WARNING if attempt >= 3 else logging.DEBUG
    reason = str(why).splitlines()[0] if str(why) else type(why).__name__
    log.log(level, "the store at %s: %s; running the transaction again", where, reason)


#: Parameters of one statement: positional, or by name.
Params = Sequence[Any] | Mapping[str, Any]
T = TypeVar("T")


class Changed(Protocol):
    """What a statement changed (read ``rowcount`` only when it matters: a
    dialect may have to wait for the database to know it)."""

    @property
    def rowcount(self) -> int: ...


class Cursor(Changed, Protocol):
    """What running a statement gives back (a DB-API cursor)."""

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Tx(ABC):
    """One connection, inside a write transaction or reading, that runs the
    dialect's named queries. Rows are tuples in the order the query selects."""

    @abstractmethod
    def execute(self, name: str, params: Params = (), where: Sequence[str] = ()) -> Cursor:
        """Run query ``name``. A query whose text holds ``{where}`` gets the
        named fragments ``where`` there, joined by AND (the fragment
        ``no_filter`` when there are none)."""

    @abstractmethod
    def executemany(self, name: str, rows: Iterable[Params]) -> Changed:
        """Run query ``name`` once per parameter row (its ``rowcount``: the
        rows changed in all)."""

    @abstractmethod
    def rows_in(self, name: str, values: Sequence[Any], params: Sequence[Any] = ()) -> list[Any]:
        """Rows of query ``name``, which tests a column against the list
        ``values`` (``{values}`` in its text), with ``params`` before the list.
        Long lists are split as the database needs."""

    def first_rows(self, name: str, rows: Iterable[Params]) -> list[Any]:
        """The first row (None if none) of query ``name`` run once per
        parameter row, in order. A dialect that pipelines sends them all
        before it reads the first reply: one round trip, not one each."""
        return [self.execute(name, params).fetchone() for params in rows]

    def rows_in_later(
        self, name: str, values: Sequence[Any], params: Sequence[Any] = ()
    ) -> Callable[[], list[Any]]:
        """:meth:`rows_in`, whose rows are read when the returned function is
        called, which may be after the transaction has committed: a dialect
        that pipelines sends the statement now and receives its rows with the
        commit's reply, saving a round trip. Send nothing after it."""
        rows = self.rows_in(name, values, params)
        return lambda: rows

    @abstractmethod
    def now(self) -> float:
        """The store clock, in Unix seconds. Inside a write transaction it
        does not go back between transactions that touch the same rows."""

    @abstractmethod
    def now_after_locks(self) -> float:
        """The store clock read again, after the row locks this transaction
        took: later than the clock of any transaction that held them. From
        here on it is what :meth:`now` gives."""

    @abstractmethod
    def is_constraint_error(self, exc: BaseException) -> bool:
        """Whether ``exc`` is the database refusing a row for a constraint."""

    @abstractmethod
    def wake(self) -> None:
        """Tell idle workers that work may be claimable, once (and only if)
        this transaction commits."""


class Relay(Tx):
    """A Tx that hands each statement to a dialect's own Tx through
    :meth:`_run`, where the dialect picks the connection and runs the
    statement again after a lost connection when nothing is lost by that."""

    @abstractmethod
    def _run(self, statement: Callable[[Tx], T]) -> T:
        """``statement(tx)`` on this block's connection."""

    def execute(self, name: str, params: Params = (), where: Sequence[str] = ()) -> Cursor:
        return self._run(lambda tx: tx.execute(name, params, where))

    def executemany(self, name: str, rows: Iterable[Params]) -> Changed:
        rows = list(rows)
        return self._run(lambda tx: tx.executemany(name, rows))

    def rows_in(self, name: str, values: Sequence[Any], params: Sequence[Any] = ()) -> list[Any]:
        return self._run(lambda tx: tx.rows_in(name, values, params))

    def now(self) -> float:
        return self._run(lambda tx: tx.now())

    def now_after_locks(self) -> float:
        return self._run(lambda tx: tx.now_after_locks())


class Database(ABC):
    """What the SQL engine needs of a dialect's store: transactions."""

    kind: str
    #: Whether claims and failures in a queue in debug mode lock its row, so
    #: that they are recorded in clock order (:mod:`rota.stores.sql.modes`).
    #: SQLite needs no lock (its writers take turns).
    orders_debug_queues: bool = False
    #: Whether the dialect's query files page one queue's jobs in queries of
    #: their own (``list_queue``, ``list_queue_state``, ``list_queue_queued``),
    #: shaped so that its planner reads the queue's index newest first
    #: rather than walking the primary key past newer jobs of other queues;
    #: otherwise ``list_jobs`` lists them too (SQLite's planner takes the index).
    pages_queues_apart: bool = False

    @abstractmethod
    def _write(self, sync: bool = True) -> AbstractContextManager[Tx]:
        """A write transaction: committed when the block ends, rolled back
        whole when it raises; database errors leave it as rota errors.
        ``sync=False``: the commit may return before it is on disk, where
        that is safe and the dialect can say so per transaction (SQLite);
        see :meth:`_transact`."""

    @abstractmethod
    def _read(self) -> AbstractContextManager[Tx]:
        """A connection for reads outside a write transaction."""

    def _transact(self, work: Callable[[Tx], T], *, sync: bool = True) -> T:
        """``work(tx)`` in one write transaction. A dialect whose database may
        abort a transaction to break a deadlock runs ``work`` again, so it
        must change nothing outside the transaction.

        ``sync=False`` is for work whose loss to a power cut or an OS crash
        harms nothing when the database and its workers share the machine,
        a claim: its jobs are then queued again, as after a lease that
        expires with its worker (which died with the machine). The next
        synced commit makes it durable with its own. A database on a server
        of its own can crash while its workers live on, running jobs whose
        claims it lost: such a dialect syncs every commit."""
        with self._write(sync) as tx:
            return work(tx)
