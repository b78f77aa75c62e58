"""What only the MySQL / MariaDB store promises: a database per store,
created if missing and migrated once however many processes start at once;
limits that hold under many concurrent claimers; transactions run again
after a deadlock or a lost connection; wake-ups through a counter that only
committed work bumps; the database's clock (text compared byte for byte is
checked on every store by test_uniqueness.py)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

MySQLdb = pytest.importorskip("MySQLdb")

from backends import MYSQL_URL, drop_store, mysql_execute, store_url  # noqa: E402
from conformance.support import claim, enqueue_one, new_job, worker_info  # noqa: E402
from helpers import wait_for  # noqa: E402
from rota.cli import main  # noqa: E402
from rota.errors import CommitInDoubt, InvalidArgument, StoreError, ValueRefused  # noqa: E402
from rota.models import ConcurrencyKey, Outcome  # noqa: E402
from rota.stores import Store, open_store  # noqa: E402
from rota.stores.mysql import MySQLStore  # noqa: E402
from rota.stores.sql.queries import migrations  # noqa: E402
from rota.stores.sql.tx import Tx  # noqa: E402

#: The schema versions this release ships, as the server lists them.
SHIPPED = [(number,) for number, _ in migrations("rota.stores.mysql")]


@pytest.fixture
def mstore(my_url: str) -> Iterator[MySQLStore]:
    store = open_store(my_url)
    assert isinstance(store, MySQLStore)
    yield store
    store.close()


def server_rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    """Rows of a query run in the store's database, behind its back."""
    conn = MySQLdb.connect(host="127.0.0.1", port=3306, user="root", database=url.rsplit("/", 1)[1])
    try:
        cursor = conn.cursor()
        cursor.execute(sql)
        return list(cursor.fetchall())
    finally:
        conn.close()


def wakeups(url: str) -> int:
    return int(server_rows(url, "SELECT value FROM meta WHERE `key` = 'wakeups'")[0][0])


def start_waiting(store: Store) -> threading.Event:
    """Start a thread that waits for work on ``store`` for up to 20 s (once
    it has seen the wake-up count); the event is set when the wait ends."""
    ready, woke = threading.Event(), threading.Event()

    def waiter() -> None:
        store.wait(["default"], 0.01)  # the count this thread saw last
        ready.set()
        store.wait(["default"], 20.0)
        woke.set()

    threading.Thread(target=waiter, daemon=True).start()
    assert ready.wait(10.0)
    return woke


# -- URLs, databases and migrations ----------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://root@127.0.0.1:3306/rota;drop", "not a plain name"),
        ("mysql://root@127.0.0.1:3306/", "names no database"),
        ("mysql://root@127.0.0.1:99999/rota", "bad port"),
        ("mysql:/root@127.0.0.1/rota", "needs '//'"),
        ("mysql://root@127.0.0.1:3306/rota?schema=x", "unknown MySQL URL option"),
        ("mysql://root@127.0.0.1:3306/rota?pool_size=0", "pool_size must be between"),
        ("mysql://root@127.0.0.1:3306/rota?pool_size=2.5", "whole number"),
        ("mysql://root@127.0.0.1:3306/rota?wake_poll=x", "must be a number"),
    ],
)
def test_a_bad_url_is_refused_before_connecting(url: str, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        open_store(url)


def test_a_missing_database_is_created_and_migrated() -> None:
    url = f"{MYSQL_URL}/rota_test_{uuid.uuid4().hex[:12]}"
    try:
        store = open_store(url)
        try:
            assert [c.id for c in claim(store)] == []
            job_id = enqueue_one(store, new_job(1))
            assert [c.id for c in claim(store)] == [job_id]
        finally:
            store.close()
        assert server_rows(url, "SELECT version FROM schema_versions") == SHIPPED
    finally:
        drop_store("mysql", url)


#: Commands that only read or steer what is in a store.
READ_ONLY_COMMANDS = [["status"], ["jobs", "list"], ["queues", "list"], ["schedules", "list"]]


@pytest.mark.parametrize("command", READ_ONLY_COMMANDS)
def test_read_only_commands_refuse_a_missing_database_and_create_nothing(
    command: list[str],
) -> None:
    database = f"rota_test_missing_{uuid.uuid4().hex[:12]}"
    url = f"{MYSQL_URL}/{database}"
    result = CliRunner(env={"ROTA_URL": None}).invoke(main, ["--url", url, *command])
    try:
        assert result.exit_code == 1, result.output
        assert result.stderr.startswith(
            f"Error: no MySQL store at 127.0.0.1:3306/{database} (the database does not "
            "exist): check --url and ROTA_URL; a worker, `rota run` or `rota send APP TASK` "
            "creates it"
        )
        assert server_rows(f"{MYSQL_URL}/mysql", f"SHOW DATABASES LIKE '{database}'") == []
    finally:
        drop_store("mysql", url)


def test_read_only_commands_refuse_a_database_without_rota_tables(my_url: str) -> None:
    result = CliRunner(env={"ROTA_URL": None}).invoke(main, ["--url", my_url, "status"])
    assert result.exit_code == 1, result.output
    assert "(the database has no rota tables)" in result.stderr
    assert server_rows(my_url, "SHOW TABLES") == []


def test_read_only_commands_read_a_store_that_exists(my_url: str) -> None:
    open_store(my_url).close()
    result = CliRunner(env={"ROTA_URL": None}).invoke(main, ["--url", my_url, "jobs", "list"])
    assert result.exit_code == 0, result.output


def test_a_migration_cut_short_after_its_statements_is_finished_by_the_next_start(
    my_url: str,
) -> None:
    """MySQL commits each DDL statement on its own: a start that died after a
    migration's statements and before recording its version leaves them
    applied and the version missing; the next start applies it again."""
    open_store(my_url).close()
    last = SHIPPED[-1][0]
    conn = MySQLdb.connect(
        host="127.0.0.1", port=3306, user="root", database=my_url.rsplit("/", 1)[1]
    )
    try:
        conn.cursor().execute("DELETE FROM schema_versions WHERE version = %s", (last,))
        conn.commit()
    finally:
        conn.close()
    store = open_store(my_url)
    try:
        job_id = enqueue_one(store, new_job(1, retry='{"backoff":[2.0,9.0]}'))
        assert [(c.id, c.retry) for c in claim(store)] == [(job_id, '{"backoff":[2.0,9.0]}')]
    finally:
        store.close()
    assert server_rows(my_url, "SELECT version FROM schema_versions") == SHIPPED


def test_many_processes_opening_a_new_database_at_once_migrate_it_once(my_url: str) -> None:
    code = "import sys; from rota.stores import open_store; open_store(sys.argv[1]).close()"
    procs = [subprocess.Popen([sys.executable, "-c", code, my_url]) for _ in range(6)]
    try:
        codes = [proc.wait(120) for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
    assert codes == [0] * 6
    assert server_rows(my_url, "SELECT version FROM schema_versions") == SHIPPED
    assert server_rows(my_url, "SELECT `key`, value FROM meta ORDER BY `key`") == [
        ("schedules_version", 0),
        ("wakeups", 0),
    ]


def test_two_stores_in_two_databases_see_only_their_own_jobs(
    mstore: MySQLStore, tmp_path: Path
) -> None:
    other_url = store_url("mysql", tmp_path)
    other = open_store(other_url)
    try:
        mine = enqueue_one(mstore, new_job(1))
        theirs = enqueue_one(other, new_job(2))
        assert [c.id for c in claim(mstore, limit=10)] == [mine]
        assert [c.id for c in claim(other, limit=10)] == [theirs]
    finally:
        other.close()
        drop_store("mysql", other_url)


def test_a_value_too_long_for_its_column_is_refused_by_name(mstore: MySQLStore) -> None:
    with pytest.raises(ValueRefused, match="Data too long for column 'id'"):
        mstore.enqueue([new_job(job_id="j" * 300)])
    assert claim(mstore, limit=10) == []


# -- concurrency ------------------------------------------------------------------------------


def test_a_concurrency_limit_holds_under_many_concurrent_claimers(my_url: str) -> None:
    """Eight stores (eight connection pools) claim and finish at once; a key
    allowing two never has more than two running, no claim fails, every job
    runs once."""
    first = open_store(my_url)
    key = ConcurrencyKey("site:example.org", 2)
    ids = {enqueue_one(first, new_job(i, concurrency=(key,))) for i in range(120)}
    running: set[str] = set()
    peak = 0
    done: list[str] = []
    errors: list[BaseException] = []
    guard = threading.Lock()

    def claimer(n: int) -> None:
        nonlocal peak
        store = open_store(my_url)
        try:
            while True:
                with guard:
                    if len(done) >= len(ids):
                        return
                for job in store.claim(f"w{n}", ["default"], 2):
                    with guard:
                        running.add(job.id)
                        peak = max(peak, len(running))
                    time.sleep(0.001)  # the job "runs"
                    with guard:
                        running.discard(job.id)
                        done.append(job.id)
                    assert store.finish([Outcome(job.id, job.token, True, result=b"1")]) == [True]
        except BaseException as exc:
            errors.append(exc)
        finally:
            store.close()

    threads = [threading.Thread(target=claimer, args=(n,), daemon=True) for n in range(8)]
    for thread in threads:
        thread.start()
    wait_for(lambda: not any(t.is_alive() for t in threads), 120, 0.05, "the claimers to finish")
    first.close()
    assert errors == []
    assert peak <= 2
    assert sorted(done) == sorted(ids)


def test_a_transaction_that_deadlocks_runs_again(my_url: str) -> None:
    """Two transactions lock two limit rows in opposite orders: InnoDB
    aborts one, which runs again and succeeds."""
    stores = [open_store(my_url) for _ in range(2)]
    both_hold_one = threading.Barrier(2, timeout=10)
    runs = [0, 0]

    def work(n: int, first: str, second: str) -> Any:
        def transaction(tx: Tx) -> None:
            runs[n] += 1
            tx.execute("limit_row", (first,)).fetchall()
            if runs[n] == 1:
                both_hold_one.wait()
            tx.execute("limit_row", (second,)).fetchall()

        return stores[n]._transact(transaction)  # type: ignore[attr-defined]

    try:
        threads = [
            threading.Thread(target=work, args=(0, "a", "b"), daemon=True),
            threading.Thread(target=work, args=(1, "b", "a"), daemon=True),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert not any(t.is_alive() for t in threads)
        assert sorted(runs) == [1, 2], "one ran once, the one InnoDB aborted ran twice"
        limits = {info.key for info in stores[0].limits()}
        assert limits == {"a", "b"}
    finally:
        for store in stores:
            store.close()


def test_a_lock_wait_timeout_runs_the_transaction_again(mstore: MySQLStore) -> None:
    timeout = MySQLdb.OperationalError(1205, "Lock wait timeout exceeded; try restarting")
    assert mstore._pause_before_retry(timeout, 1, committing=True) is not None
    assert mstore._pause_before_retry(timeout, 10, committing=False) is None  # the last attempt


def test_killed_connections_are_replaced_and_the_call_runs(mstore: MySQLStore, my_url: str) -> None:
    first = enqueue_one(mstore, new_job(1))
    database = my_url.rsplit("/", 1)[1]
    ids = server_rows(
        my_url,
        "SELECT id FROM information_schema.PROCESSLIST"
        f" WHERE db = '{database}' AND id <> CONNECTION_ID()",
    )
    assert ids, "the store keeps its connections open"
    for (conn_id,) in ids:
        mysql_execute(my_url, f"KILL {int(conn_id)}")
    second = enqueue_one(mstore, new_job(2))  # a transaction
    assert mstore.get_job(first) is not None  # a read
    assert {c.id for c in claim(mstore, limit=10)} == {first, second}


def test_a_server_error_on_a_connection_the_server_then_ends_runs_the_work_again(
    mstore: MySQLStore, my_url: str
) -> None:
    """A server ending a connection mid-statement may first answer with an
    unrelated error (MariaDB has answered a ``KILL CONNECTION`` with a parse
    error): when the rollback then finds the connection gone, the work runs
    again on a new one, as after any lost connection."""
    runs = 0

    def transaction(tx: Any) -> int:  # a MySQLTx, which runs SQL text
        nonlocal runs
        runs += 1
        if runs == 1:
            (conn_id,) = tx.run("SELECT CONNECTION_ID()").fetchone()
            try:
                tx.run("SIGNAL SQLSTATE '42000' SET MYSQL_ERRNO = 1064")
            except MySQLdb.ProgrammingError:
                mysql_execute(my_url, f"KILL CONNECTION {int(conn_id)}")
                raise
        return runs

    assert mstore._transact(transaction) == 2
    assert mstore.get_job(enqueue_one(mstore, new_job(1))) is not None

    def failing(tx: Any) -> None:  # an error on a live connection is the caller's
        tx.run("SIGNAL SQLSTATE '42000' SET MYSQL_ERRNO = 1064")

    with pytest.raises(StoreError, match="1064"):
        mstore._transact(failing)


def test_a_commit_cut_off_is_reported_as_unknown(mstore: MySQLStore) -> None:
    lost = MySQLdb.OperationalError(2013, "Lost connection to server during query")
    with pytest.raises(CommitInDoubt, match="whether the commit happened is not known"):
        mstore._pause_before_retry(lost, 1, committing=True)
    assert mstore._pause_before_retry(lost, 1, committing=False) == 0.0


# -- wake-ups ----------------------------------------------------------------------------------


def test_only_committed_work_bumps_the_wake_up_counter(mstore: MySQLStore, my_url: str) -> None:
    before = wakeups(my_url)
    enqueue_one(mstore, new_job(1))
    assert wakeups(my_url) == before + 1

    def rolled_back(tx: Tx) -> None:
        tx.wake()
        raise RuntimeError("the work failed")

    with pytest.raises(RuntimeError):
        mstore._transact(rolled_back)
    mstore.heartbeat(worker_info("w1"))  # commits, but makes nothing claimable
    assert wakeups(my_url) == before + 1


def test_a_waiting_worker_wakes_when_work_is_committed_elsewhere(
    mstore: MySQLStore, my_url: str
) -> None:
    other = open_store(my_url)
    try:
        woke = start_waiting(mstore)
        assert not woke.wait(0.3), "nothing happened: it sleeps"
        started = time.monotonic()
        enqueue_one(other, new_job(1))
        assert woke.wait(10.0)
        assert time.monotonic() - started < 1.0
    finally:
        other.close()


def test_work_this_process_commits_ends_its_own_waits_at_once(my_url: str) -> None:
    """A worker whose finished job frees a concurrency key's slot claims
    again without waiting for its next look at the count (every 5 s here)."""
    store = open_store(f"{my_url}?wake_poll=5")
    key = ConcurrencyKey("site", 1)
    try:
        enqueue_one(store, new_job(1, concurrency=(key,)))
        enqueue_one(store, new_job(2, concurrency=(key,)))
        [first] = claim(store, limit=2)  # the second waits for the key's slot
        woke = start_waiting(store)
        assert not woke.wait(0.3), "nothing happened: it sleeps"
        started = time.monotonic()
        assert store.finish([Outcome(first.id, first.token, ok=True, result=b"1")]) == [True]
        assert woke.wait(10.0)
        assert time.monotonic() - started < 2.0  # not at its next look, 5 s on
        assert len(claim(store)) == 1
    finally:
        store.close()


def test_work_committed_just_before_a_wait_is_not_slept_through(
    mstore: MySQLStore, my_url: str
) -> None:
    """A worker claims, finds nothing, then waits: a job sent in between
    ends the wait at once."""
    other = open_store(my_url)
    try:
        mstore.wait(["default"], 0.01)  # the count this thread saw last
        assert claim(mstore) == []
        enqueue_one(other, new_job(1))
        started = time.monotonic()
        mstore.wait(["default"], 20.0)
        assert time.monotonic() - started < 1.0
        assert len(claim(mstore)) == 1
    finally:
        other.close()


def test_right_after_work_a_waiting_worker_looks_more_often(my_url: str) -> None:
    """With wake_poll=2, an idle worker looks every 2 s; one that just saw
    work looks every few tens of milliseconds at first."""
    waiting = open_store(f"{my_url}?wake_poll=2")
    sender = open_store(my_url)
    try:
        waiting.wait(["default"], 0.01)
        enqueue_one(sender, new_job(1))
        waiting.wait(["default"], 20.0)  # sees the job: work was seen just now
        assert len(claim(waiting)) == 1
        woke = start_waiting(waiting)
        started = time.monotonic()
        enqueue_one(sender, new_job(2))
        assert woke.wait(10.0)
        assert time.monotonic() - started < 1.0
    finally:
        waiting.close()
        sender.close()


def test_a_wait_ends_when_the_next_delayed_job_is_due(mstore: MySQLStore) -> None:
    enqueue_one(mstore, new_job(1, delay=0.3))
    started = time.monotonic()
    mstore.wait(["default"], 20.0)
    assert 0.2 <= time.monotonic() - started < 5.0


def test_the_store_clock_is_the_databases(mstore: MySQLStore, my_url: str) -> None:
    server = server_rows(my_url, "SELECT UNIX_TIMESTAMP(NOW(6))")[0][0]
    assert abs(mstore.now() - float(server)) < 1.0
    with mstore._read() as tx:
        assert tx.now() == tx.now(), "read once per transaction"
