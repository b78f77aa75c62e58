"""What only the Redis store has: hash-tagged keys, scripts loaded by SHA with a
NOSCRIPT fallback, Redis TIME as the clock, replay of batches whose reply was
lost, reconnecting through an outage, and BLPOP wake-ups.

Tests that restart, flush or cut off Redis use a private ``redis-server`` on a
free port, never the shared one.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import logging
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path

import pytest

redis = pytest.importorskip("redis")

from redis.crc import key_slot  # noqa: E402

from backends import drop_store, store_url  # noqa: E402
from conformance.support import (  # noqa: E402
    claim,
    claim_one,
    enqueue_one,
    fail,
    get,
    lease,
    new_job,
    schedule,
    succeed,
    wait_expired,
    worker_info,
)
from helpers import wait_for  # noqa: E402
from rota._ids import unique_ids  # noqa: E402
from rota.errors import StoreUnavailable  # noqa: E402
from rota.models import (  # noqa: E402
    BreakerKey,
    ClaimedJob,
    ConcurrencyKey,
    JobQuery,
    JobState,
    RateKey,
)
from rota.stores import open_store  # noqa: E402
from rota.stores.redis import (  # noqa: E402
    RedisStore,
    _codec,
    keys,
    scripts,
)
from rota.stores.roles import claim_or_wait  # noqa: E402

REDIS_SERVER = shutil.which("redis-server")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """A private ``redis-server`` without persistence, on a free port."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        assert REDIS_SERVER is not None
        self.proc = subprocess.Popen(
            [
                REDIS_SERVER,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)

        def up() -> bool:
            try:
                return bool(client.ping())
            except redis.ConnectionError:
                return False

        wait_for(up, timeout=10, what="redis-server to accept connections")
        client.close()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[RedisServer]:
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed")
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A fresh namespace on the shared Redis."""
    value = store_url("redis", tmp_path)
    yield value
    drop_store("redis", value)


@pytest.fixture
def rstore(redis_url: str) -> Iterator[RedisStore]:
    store = open_store(redis_url)
    assert isinstance(store, RedisStore)
    yield store
    store.close()


def workout(store: RedisStore) -> None:
    """Use every verb once, so every kind of key gets written."""
    limited = new_job(
        "x",
        queue="crawl",
        priority=3,
        concurrency=(ConcurrencyKey("spiders", 2),),
        rate=(RateKey("example.com", 5.0, 2),),
        breaker=(BreakerKey("example.com", 1, 60.0),),
        unique_key="fetch:x",
        unique_for=60.0,
    )
    enqueue_one(store, limited)
    enqueue_one(store, new_job("later", delay=60.0))
    enqueue_one(store, new_job("retried", max_attempts=3))
    enqueue_one(store, new_job("lost", lease=0.05))
    store.wait(["crawl", "default"], 0.01)
    first = claim(store, ["crawl"], limit=5)
    assert len(first) == 1
    assert store.extend([lease(first[0])]) == ["held"]
    assert fail(store, first[0])  # opens the breaker
    retried, lost = claim(store, limit=2)
    assert fail(store, retried, retry_in=60.0)
    wait_expired(store, lost.id)
    assert store.recover() == [lost.id]
    again = claim_one(store)
    assert store.release([lease(again)]) == [True]
    assert succeed(store, claim_one(store))
    pending = enqueue_one(store, new_job("cancel me"))
    assert store.cancel([pending]) == [True]
    assert store.retry([pending]) == [True]
    assert store.delete([pending]) == [True]
    store.pause_queue("crawl")
    store.resume_queue("crawl")
    enqueue_one(store, new_job("purged", queue="crawl"))
    assert store.purge_queue("crawl") == 1
    store.set_limit("spiders", 4)
    assert store.reset_breaker("example.com")
    store.heartbeat(worker_info("w-1"))
    store.upsert_schedule(schedule("nightly", next_fire=1_000.0))
    job = new_job(schedule="nightly", fire_time=1_000.0)
    assert store.fire_schedule("nightly", 1_000.0, 2_000.0, job) == "fired"
    assert store.retry_failed() >= 1
    store.list_jobs(JobQuery(search="x"))
    store.queues()
    store.limits()
    store.totals()
    store.throughput(0)
    store.purge_finished(0.0)


def test_every_key_carries_the_namespace_hash_tag(private_redis: RedisServer) -> None:
    store = open_store(f"{private_redis.url}?namespace=tagged")
    assert isinstance(store, RedisStore)
    try:
        workout(store)
    finally:
        store.close()
    client = redis.Redis(port=private_redis.port)
    found = [k.decode() for k in client.scan_iter(count=1000)]
    client.close()
    assert len(found) > 20
    assert all(k.startswith("{rota:tagged}:") for k in found), found
    assert len({key_slot(k.encode()) for k in found}) == 1
    kinds = {k.removeprefix("{rota:tagged}:").split(":", 1)[0] for k in found}
    known = set(keys.STATIC) | set(keys.KINDS)
    assert kinds <= known, kinds - known


def test_keys_module_names_what_the_scripts_write(rstore: RedisStore) -> None:
    k = rstore.keys
    job = new_job(
        "a",
        task="fetch",
        queue="crawl",
        priority=7,
        concurrency=(ConcurrencyKey("spiders", 2),),
        unique_key="u:a",
        schedule="s",
    )
    enqueue_one(rstore, job)
    limits = job.limits_field()
    assert limits is not None
    sig = hashlib.sha1(limits).hexdigest()
    client = redis.Redis.from_url(rstore.options.url)
    expected = [
        k.job(job.id),
        k.qpage("crawl", 0),
        k.qpages("crawl"),
        k.qcount("crawl"),
        k.sched("s"),
        k.ready("crawl", 7, sig),
        k.sigs("crawl", 7),
        k.heads("crawl", 7),
        k.prios("crawl"),
        k.fair("crawl"),
        k.unique("u:a"),
        k.signal("crawl"),
        k.static("seq"),
        k.static("queues"),
    ]
    assert [bool(client.exists(key)) for key in expected] == [True] * len(expected)
    # a queued job has no global state entry and no task entry until it moves on
    assert client.exists(k.state(JobState.QUEUED), k.task("fetch")) == 0
    claimed = claim_one(rstore, "crawl")
    assert client.exists(k.state(JobState.RUNNING), k.task("fetch")) == 2
    assert client.zscore(k.static("leases"), job.id) is not None
    assert client.hget(k.limit("spiders"), "running") == b"1"
    assert not client.exists(k.ready("crawl", 7, sig))
    assert succeed(rstore, claimed)
    minute = int(rstore.now() // 60)
    assert client.exists(k.stats(minute), k.static("totals"), k.static("finished")) == 3
    client.close()


def test_every_script_declares_keys_and_argv() -> None:
    for name in scripts.names():
        header = (files(scripts.__package__) / "lua" / f"{name}.lua").read_text().split("\n\n")[0]
        assert set(scripts.library().static[name]) <= set(keys.STATIC)
        assert "-- KEYS[1] prefix:" in header, name
        assert "-- ARGV" in header, name


def test_the_library_is_loaded_again_after_function_flush(private_redis: RedisServer) -> None:
    store = open_store(f"{private_redis.url}?namespace=flushed")
    client = redis.Redis(port=private_redis.port)
    name = scripts.library().name
    try:
        first = enqueue_one(store, new_job(1))
        assert claim_one(store).id == first
        client.function_flush()
        assert client.function_list(library=name) == []
        second = enqueue_one(store, new_job(2))
        client.function_flush()
        claimed = claim_one(store)
        assert claimed.id == second
        client.function_flush()
        assert succeed(store, claimed)
        assert get(store, second).state is JobState.SUCCEEDED
        assert len(client.function_list(library=name)) == 1
    finally:
        client.close()
        store.close()


def blpop_clients(admin: redis.Redis, *, blocked: bool = False) -> list[int]:
    """The ids of the server's clients whose last command was BLPOP (a
    blocked one, or an idle connection of the waits); with ``blocked``, only
    those blocked in it now."""
    return [
        int(c["id"])
        for c in admin.client_list()
        if c["cmd"] == "blpop" and (not blocked or "b" in c["flags"])
    ]


def test_waits_work_where_an_acl_refuses_client_commands(private_redis: RedisServer) -> None:
    """Where the server's ACL refuses ``CLIENT ID`` and ``CLIENT UNBLOCK``
    (with which a stopping worker ends its wait early), a waiting claim still
    gets the job sent to it, and an interrupted one runs out its wait."""
    admin = redis.Redis(port=private_redis.port)
    admin.acl_setuser(
        "waiter", enabled=True, nopass=True, keys="*", channels="*", commands=["+@all", "-client"]
    )
    url = f"redis://waiter:any@127.0.0.1:{private_redis.port}/0?namespace=acl"
    store, sender = open_store(url), open_store(url)
    probe = redis.Redis(port=private_redis.port, username="waiter", password="any")
    try:
        with pytest.raises(redis.exceptions.NoPermissionError):
            probe.client_id()
        assert claim_or_wait(store, "w", ["default"], 2, 0.2) == []  # registers it idle
        got: list[list[ClaimedJob]] = []
        waiting = threading.Thread(
            target=lambda: got.append(claim_or_wait(store, "w", ["default"], 2, 5.0))
        )
        waiting.start()
        job_id = enqueue_one(sender, new_job("handed"))
        waiting.join(10)
        assert [[job.id for job in jobs] for jobs in got] == [[job_id]]
        started = time.monotonic()
        late = threading.Thread(target=lambda: claim_or_wait(store, "w", ["default"], 1, 0.5))
        late.start()
        # (the first wait's connection, idle, also shows BLPOP: wait for a blocked one)
        wait_for(
            lambda: blpop_clients(admin, blocked=True), 5.0, 0.01, "the wait to block on the server"
        )
        store.interrupt_waits()  # CLIENT UNBLOCK refused: the blocked pop runs out
        late.join(10)
        assert time.monotonic() - started >= 0.4
    finally:
        store.close()
        sender.close()
        probe.close()
        admin.close()


def test_a_wait_on_a_connection_opened_again_is_still_ended_early(
    private_redis: RedisServer,
) -> None:
    """A connection of the waits learns its client id at each connect: once
    the server cut it and the store opened another, a stopping worker's
    wait on the new one still ends at once."""
    store = open_store(f"{private_redis.url}?namespace=cut")
    admin = redis.Redis(port=private_redis.port)
    try:
        store.wait(["default"], 0.05)  # opens the waits' connection
        (first,) = blpop_clients(admin)
        admin.client_kill_filter(_id=str(first))
        ended = threading.Event()
        thread = threading.Thread(target=lambda: (store.wait(["default"], 10.0), ended.set()))
        started = time.monotonic()
        thread.start()
        wait_for(lambda: blpop_clients(admin), 10.0, 0.01, "the wait to block again")
        assert first not in blpop_clients(admin)
        store.interrupt_waits()
        assert ended.wait(2.0), "the wait on the new connection was ended"
        assert time.monotonic() - started < 5.0
        thread.join(10)
    finally:
        store.close()
        admin.close()


def test_two_libraries_live_side_by_side(private_redis: RedisServer) -> None:
    """Another rota version's library (another text, so another name) neither
    stops this one loading nor replaces its functions."""
    client = redis.Redis(port=private_redis.port)
    store = open_store(f"{private_redis.url}?namespace=side")
    other = scripts.build({"heartbeat": "-- KEYS[1] prefix: p\n-- ARGV none\n\nreturn 7"})
    try:
        scripts.load(client, other)
        scripts.load(client, other)  # already there: no error
        job = enqueue_one(store, new_job(1))
        assert claim_one(store).id == job
        assert client.fcall(other.function("heartbeat"), 1, "p") == 7
        listed = {entry[1].decode() for entry in client.function_list()}
        assert listed == {other.name, scripts.library().name}
    finally:
        client.close()
        store.close()


def test_a_script_error_keeps_the_connection_and_a_fork_opens_its_own(rstore: RedisStore) -> None:
    """Script calls share a few connections (``_conn.Lane``): an error reply
    leaves the connection in use; a forked child never touches the parent's."""
    lane = rstore._scripts._lane
    enqueue_one(rstore, new_job(1))
    (conn,) = lane._idle
    with pytest.raises(redis.exceptions.ResponseError, match="Function not found"):
        lane.call("FCALL", "rota_no_such_function", 0)
    assert lane._idle == [conn]
    parent_ids = copy.deepcopy(unique_ids)  # the ids the parent makes next
    pid = os.fork()
    if pid == 0:  # the child: its own connection and ids, the parent's left alone
        code = 1
        try:
            enqueue_one(rstore, new_job(2))
            code = 0 if lane._idle and lane._idle[0] is not conn else 2
            code = code or (3 if unique_ids.next() == parent_ids.next() else 0)
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert lane._idle == [conn]
    assert len(claim(rstore, limit=5)) == 2


def test_clock_is_redis_time_not_the_callers(
    rstore: RedisStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = redis.Redis.from_url(rstore.options.url)
    seconds, micros = client.time()
    server_now = seconds + micros / 1e6
    real_time = time.time
    monkeypatch.setattr(time, "time", lambda: real_time() + 3600.0)  # a skewed machine

    assert abs(rstore.now() - server_now) < 1.0
    job_id = enqueue_one(rstore, new_job(lease=10.0))
    job = get(rstore, job_id)
    assert abs(job.enqueued_at - server_now) < 1.0
    assert job.state is JobState.QUEUED
    claimed = claim_one(rstore)
    assert abs(claimed.started_at - server_now) < 1.0
    assert get(rstore, job_id).lease_expires == pytest.approx(claimed.started_at + 10.0)
    client.close()


class DroppingProxy:
    """A TCP proxy to Redis that can swallow one reply: the command reaches Redis
    and runs there, but the client's connection is cut before the answer arrives."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.drop_next = threading.Event()
        self.dropped = 0
        self._sockets: list[socket.socket] = [self.listener]
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            self._sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, True), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, replies: bool) -> None:
        try:
            while data := src.recv(65536):
                if replies and self.drop_next.is_set():
                    self.drop_next.clear()
                    self.dropped += 1
                    break
                dst.sendall(data)
        except OSError:
            pass
        for sock in (src, dst):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def close(self) -> None:
        self._closed = True
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()


@pytest.fixture
def proxy(private_redis: RedisServer) -> Iterator[DroppingProxy]:
    value = DroppingProxy(private_redis.port)
    yield value
    value.close()


def test_a_batch_whose_reply_was_lost_acts_once(proxy: DroppingProxy) -> None:
    store = open_store(f"redis://127.0.0.1:{proxy.port}/0?namespace=replay")
    try:
        store.now()  # connection established
        job = new_job("once", max_attempts=2)
        proxy.drop_next.set()
        assert store.enqueue([job])[0].id == job.id  # not "already exists"
        assert proxy.dropped == 1

        proxy.drop_next.set()
        claimed = claim_one(store)  # the retried call returns the first claim
        assert proxy.dropped == 2
        assert claimed.attempt == 1
        assert get(store, job.id).attempt == 1

        proxy.drop_next.set()
        assert succeed(store, claimed, "done")  # not refused as stale
        assert proxy.dropped == 3
        assert get(store, job.id).result == "done"
        assert [t.succeeded for t in store.totals()] == [1]

        store.upsert_schedule(schedule("hourly", next_fire=3_600.0))
        proxy.drop_next.set()
        fired = store.fire_schedule("hourly", 3_600.0, 7_200.0, new_job(schedule="hourly"))
        assert (fired, proxy.dropped) == ("fired", 4)
        assert len(store.list_jobs(JobQuery(schedule="hourly")).jobs) == 1
    finally:
        store.close()


def test_replies_are_remembered_only_as_long_as_calls_retry(redis_url: str) -> None:
    store = open_store(f"{redis_url}&retry_for=5")
    assert isinstance(store, RedisStore)
    client = redis.Redis.from_url(store.options.url)
    try:
        enqueue_one(store, new_job())
        remembered = list(client.scan_iter(match=store.keys.req("*"), count=1000))
        assert len(remembered) == 1
        assert 30 < client.ttl(remembered[0]) <= 35
    finally:
        client.close()
        store.close()


def test_an_outage_is_logged_once_and_calls_carry_on(
    private_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    store = open_store(f"{private_redis.url}?namespace=outage&retry_for=20")
    caplog.set_level(logging.WARNING, logger="rota.stores.redis")
    restarted = threading.Event()

    def restart_later() -> None:
        time.sleep(1.0)
        private_redis.start()
        restarted.set()

    thread = threading.Thread(target=restart_later, daemon=True)
    try:
        enqueue_one(store, new_job("before"))
        private_redis.stop()
        thread.start()
        enqueue_one(store, new_job("during"))  # blocks through the outage, then goes in
        assert restarted.is_set()
        assert [j.args for j in store.list_jobs(JobQuery()).jobs] == [["during"]]  # no AOF
    finally:
        if thread.is_alive():
            thread.join(10)  # the restarted server is the fixture's to stop
        store.close()
    messages = [r.getMessage() for r in caplog.records]
    assert sum("lost the connection to Redis" in m for m in messages) == 1, messages
    assert sum("reconnected to Redis" in m for m in messages) == 1, messages


def test_an_outage_longer_than_retry_for_raises_store_unavailable(
    private_redis: RedisServer,
) -> None:
    store = open_store(f"{private_redis.url}?namespace=down&retry_for=0.3")
    try:
        store.now()
        private_redis.stop()
        started = time.monotonic()
        with pytest.raises(StoreUnavailable):
            store.enqueue([new_job()])
        assert time.monotonic() - started < 5.0
    finally:
        store.close()


def test_a_store_opened_without_waiting_fails_at_once_on_a_server_never_reached(
    private_redis: RedisServer,
) -> None:
    url = f"{private_redis.url}?namespace=never"  # retry_for: 30 s
    private_redis.stop()
    store = open_store(url, wait=False)
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="is unreachable"):
            store.queues()
        assert time.monotonic() - started < 5.0
    finally:
        store.close()


def test_wait_wakes_as_soon_as_a_job_arrives(rstore: RedisStore, redis_url: str) -> None:
    other = open_store(redis_url)
    woke = threading.Event()

    def waiter() -> None:
        rstore.wait(["inbox"], 20.0)
        woke.set()

    try:
        assert claim(rstore, ["inbox"]) == []
        thread = threading.Thread(target=waiter, daemon=True)
        thread.start()
        assert not woke.wait(0.3)  # nothing to do: it blocks
        started = time.monotonic()
        enqueue_one(other, new_job(queue="inbox"))
        assert woke.wait(10.0)
        assert time.monotonic() - started < 5.0
        thread.join(10)
        assert len(claim(rstore, ["inbox"])) == 1
    finally:
        other.close()


def test_wait_ends_when_the_next_delayed_job_is_due(rstore: RedisStore) -> None:
    job_id = enqueue_one(rstore, new_job(delay=0.5))
    run_at = get(rstore, job_id).run_at
    assert claim(rstore) == []
    rstore.wait(["default"], 20.0)
    assert run_at - 0.05 <= rstore.now() < run_at + 5.0
    assert claim_one(rstore).id == job_id


def test_wake_ups_older_than_the_last_claim_do_not_cut_a_wait_short(rstore: RedisStore) -> None:
    for i in range(5):
        enqueue_one(rstore, new_job(i))  # each leaves a wake-up token behind
    assert len(claim(rstore, limit=10)) == 5
    started = time.monotonic()
    rstore.wait(["default"], 0.5)
    assert time.monotonic() - started >= 0.4


def test_a_blocked_backlog_of_many_keys_is_skipped_in_one_claim(rstore: RedisStore) -> None:
    """Each host has its own sub-queue; a claim skips a blocked host's whole
    backlog at the cost of one look, so 200 blocked hosts ahead of a free one
    do not hide it."""
    hosts = [f"h{i}.example" for i in range(200)]
    for host in hosts:
        enqueue_one(rstore, new_job(host, concurrency=(ConcurrencyKey(host, 1),)))
    assert len(claim(rstore, limit=200)) == 200
    rstore.enqueue(
        [
            new_job(host, i, concurrency=(ConcurrencyKey(host, 1),))
            for host in hosts
            for i in range(10)
        ]
    )
    free = enqueue_one(rstore, new_job("free.example"))
    assert [c.id for c in claim(rstore, limit=5)] == [free]


def test_a_queue_named_twice_in_a_claim_gives_each_job_once(rstore: RedisStore) -> None:
    ids = {r.id for r in rstore.enqueue([new_job(i) for i in range(3)])}
    claimed = rstore.claim("w", ["default", "default"], 10)
    assert sorted(c.id for c in claimed) == sorted(ids)


def test_unique_key_is_held_by_a_redis_ttl_after_success(rstore: RedisStore) -> None:
    job_id = enqueue_one(rstore, new_job(unique_key="k", unique_for=30.0))
    assert succeed(rstore, claim_one(rstore))
    client = redis.Redis.from_url(rstore.options.url)
    key = rstore.keys.unique("k")
    assert client.get(key) == job_id.encode()
    assert 29_000 < client.pttl(key) <= 30_001  # (its end rounded up to the millisecond)
    client.close()


def test_a_first_attempt_success_keeps_the_hash_compact(rstore: RedisStore) -> None:
    """Its one history entry is kept as two short fields, not as a JSON string
    too long for Redis's compact hash encoding; it reads back the same."""
    rstore.heartbeat(worker_info("w-a", host="box-a"))
    job_id = enqueue_one(rstore, new_job(7))
    assert succeed(rstore, claim_one(rstore, worker="w-a"))
    client = redis.Redis.from_url(rstore.options.url)
    key = rstore.keys.job(job_id)
    assert client.object("encoding", key) == b"listpack"
    assert not client.hexists(key, "history")
    client.close()
    job = get(rstore, job_id)
    at = job.finished_at
    assert job.history == (
        {"attempt": 1, "event": "succeeded", "worker": "w-a", "host": "box-a", "at": at},
    )


def test_a_success_after_other_attempts_appends_to_the_history(rstore: RedisStore) -> None:
    rstore.heartbeat(worker_info("w-a", host="box-a"))
    job_id = enqueue_one(rstore, new_job(7))
    assert rstore.release([lease(claim_one(rstore, worker="w-a"))]) == [True]
    assert succeed(rstore, claim_one(rstore, worker="w-a"))
    client = redis.Redis.from_url(rstore.options.url)
    assert client.hexists(rstore.keys.job(job_id), "history")
    assert not client.hexists(rstore.keys.job(job_id), "ran_by")
    client.close()
    assert [(h["attempt"], h["event"]) for h in get(rstore, job_id).history] == [
        (1, "released"),
        (1, "succeeded"),
    ]


def test_namespace_and_options_come_from_the_url() -> None:
    store = RedisStore.from_url("redis://127.0.0.1:6379/3?namespace=crawl&retry_for=5")
    try:
        assert store.keys.prefix == "{rota:crawl}:"
        assert store.options.retry_for == 5.0
        assert store.options.url == "redis://127.0.0.1:6379/3"
    finally:
        store.close()
    default = RedisStore.from_url("redis://127.0.0.1:6379/0")
    assert default.keys.prefix == "{rota:default}:"
    default.close()


def test_unique_namespaces_do_not_see_each_other(tmp_path: Path) -> None:
    urls = [store_url("redis", tmp_path) for _ in range(2)]
    stores = [open_store(u) for u in urls]
    try:
        enqueue_one(stores[0], new_job("mine"))
        assert claim(stores[1]) == []
        assert stores[1].queues() == []
        assert len(claim(stores[0])) == 1
    finally:
        for store, url in zip(stores, urls, strict=True):
            store.close()
            drop_store("redis", url)


@pytest.mark.parametrize("namespace", ["a}b", "a{b", "a%20b", "a%0Ab", ""])
def test_bad_namespace_is_refused(namespace: str) -> None:
    from rota.errors import InvalidArgument

    with pytest.raises(InvalidArgument, match="namespace must be non-empty, printable"):
        RedisStore.from_url(f"redis://127.0.0.1:6379/0?namespace={namespace}")


@pytest.mark.parametrize(
    ("query", "fragments"),
    [
        ("nmespace=x", ["unknown Redis URL option 'nmespace'", "did you mean 'namespace'?"]),
        ("sockettimeout=3", ["'sockettimeout'", "socket_timeout", "retry_for"]),
        ("socket_timeout=soon", ["socket_timeout", "soon"]),
    ],
)
def test_an_unknown_or_bad_url_option_is_refused_by_name(query: str, fragments: list[str]) -> None:
    from rota.errors import InvalidArgument

    with pytest.raises(InvalidArgument) as caught:
        RedisStore.from_url(f"redis://127.0.0.1:6379/0?{query}")
    for fragment in fragments:
        assert fragment in str(caught.value)


def test_the_options_redis_py_takes_pass_through() -> None:
    url = "rediss://127.0.0.1:6379/0?namespace=n&ssl_cert_reqs=none&socket_timeout=3&client_name=c"
    store = RedisStore.from_url(url)
    store.close()
    store = RedisStore.from_url("unix:///tmp/redis.sock?db=2&namespace=n")
    store.close()


def test_a_database_the_server_does_not_have_is_a_store_error(redis_url: str) -> None:
    from rota.errors import StoreError

    base, _, query = redis_url.partition("?")
    store = open_store(f"{base.rsplit('/', 1)[0]}/99999?{query}")
    try:
        with pytest.raises(StoreError, match="has no database 99999"):
            store.queues()
    finally:
        store.close()


def parked(store: RedisStore, queue: str = "default") -> dict[str, float]:
    """The parked sub-queues of a queue: ``PRIO:SIG`` -> when to look again."""
    client = redis.Redis.from_url(store.options.url)
    try:
        return {
            m.decode(): s
            for m, s in client.zrange(store.keys.parked(queue), 0, -1, withscores=True)
        }
    finally:
        client.close()


def test_a_rate_limited_sub_queue_parks_until_its_next_token(rstore: RedisStore) -> None:
    rate = (RateKey("api", 4.0, 1),)  # a token every 0.25 s
    rstore.enqueue([new_job(i, rate=rate) for i in range(3)])
    first = claim(rstore, limit=3)
    assert len(first) == 1
    (until,) = parked(rstore).values()
    assert until == pytest.approx(first[0].started_at + 0.25, abs=0.05)
    rstore.wait(["default"], 20.0)  # ends when the token is due, not after 20 s
    assert rstore.now() >= until - 0.01
    assert len(claim(rstore, limit=3)) == 1


def test_a_sub_queue_parked_on_a_busy_key_wakes_when_a_slot_frees(
    rstore: RedisStore, redis_url: str
) -> None:
    limit = (ConcurrencyKey("one-at-a-time", 1),)
    rstore.enqueue([new_job(i, concurrency=limit) for i in range(2)])
    running = claim_one(rstore)
    assert claim(rstore) == []
    assert len(parked(rstore)) == 1
    enqueue_one(rstore, new_job("more", concurrency=limit))  # joins the parked sub-queue
    assert claim(rstore) == []

    woke = threading.Event()

    def waiter() -> None:
        rstore.wait(["default"], 20.0)
        woke.set()

    thread = threading.Thread(target=waiter, daemon=True)
    thread.start()
    assert not woke.wait(0.3)
    other = open_store(redis_url)
    try:
        assert succeed(other, running)  # frees the slot: the sub-queue is listed again
    finally:
        other.close()
    assert woke.wait(10.0)
    thread.join(10)
    assert parked(rstore) == {}
    assert len(claim(rstore)) == 1


def test_resetting_a_breaker_unparks_its_sub_queue(rstore: RedisStore) -> None:
    breaker = (BreakerKey("flaky.example", 1, 3600.0),)
    rstore.enqueue([new_job(i, breaker=breaker) for i in range(2)])
    assert fail(rstore, claim_one(rstore))  # opens the breaker for an hour
    assert claim(rstore) == []
    (until,) = parked(rstore).values()
    assert until > rstore.now() + 3000
    assert rstore.reset_breaker("flaky.example")
    assert parked(rstore) == {}
    assert len(claim(rstore)) == 1


def test_emptying_a_parked_sub_queue_forgets_it(rstore: RedisStore) -> None:
    limit = (ConcurrencyKey("busy", 1),)
    ids = [r.id for r in rstore.enqueue([new_job(i, concurrency=limit) for i in range(2)])]
    running = claim_one(rstore)
    assert claim(rstore) == []
    assert len(parked(rstore)) == 1
    waiting = [i for i in ids if i != running.id]
    assert rstore.cancel(waiting) == [True]
    assert parked(rstore) == {}
    assert succeed(rstore, running)
    assert claim(rstore) == []


def test_a_job_lost_for_good_counts_as_a_failure(rstore: RedisStore) -> None:
    job_id = enqueue_one(rstore, new_job(task="fragile", lease=0.05, max_lost=1))
    claim_one(rstore)
    wait_expired(rstore, job_id)
    assert rstore.recover() == [job_id]
    assert get(rstore, job_id).error == "worker_lost"
    assert [(t.task, t.succeeded, t.failed) for t in rstore.totals()] == [("fragile", 0, 1)]
    assert sum(m.failed for m in rstore.throughput(rstore.now() - 120)) == 1


def test_retention_drops_fairness_entries_the_queue_clock_has_passed(rstore: RedisStore) -> None:
    keys_ = [f"h{i}.example" for i in range(50)]
    rstore.enqueue([new_job(k, concurrency=(ConcurrencyKey(k, 1),)) for k in keys_])
    claimed = claim(rstore, limit=50)
    assert len(claimed) == 50
    assert all(succeed(rstore, job) for job in claimed)
    client = redis.Redis.from_url(rstore.options.url)
    try:
        assert client.hlen(rstore.keys.fair("default")) == 50
        rstore.purge_finished(3600.0)  # jobs stay; the stale fairness entries go
        assert client.hlen(rstore.keys.fair("default")) == 0
        assert len(rstore.list_jobs(JobQuery()).jobs) == 50
    finally:
        client.close()
    # new jobs are ordered as before: round robin from the queue's clock
    first = enqueue_one(rstore, new_job("a", concurrency=(ConcurrencyKey("h0.example", 1),)))
    second = enqueue_one(rstore, new_job("b", concurrency=(ConcurrencyKey("h1.example", 1),)))
    assert [c.id for c in claim(rstore, limit=2)] == [first, second]


# -- hand-off to idle workers ------------------------------------------------------


def test_a_job_sent_to_an_idle_worker_is_claimed_by_the_send(rstore: RedisStore) -> None:
    """The enqueue claims for a registered idle worker and fills its inbox."""
    assert rstore._claim("idle-w", ["default"], 2, 30.0)[0] == []  # registers as idle for 30 s
    job_id = enqueue_one(rstore, new_job())
    job = get(rstore, job_id)
    assert job.state == JobState.RUNNING and job.worker == "idle-w" and job.attempt == 1
    (taken,) = claim(rstore, ["default"], limit=2, worker="idle-w")  # the next claim takes it
    assert taken.id == job_id and succeed(rstore, taken)


def test_jobs_handed_to_a_worker_that_stops_go_back_to_the_queue(rstore: RedisStore) -> None:
    assert rstore._claim("idle-w", ["default"], 2, 30.0)[0] == []
    job_id = enqueue_one(rstore, new_job())
    assert get(rstore, job_id).state == JobState.RUNNING
    rstore.remove_worker("idle-w")
    job = get(rstore, job_id)
    assert job.state == JobState.QUEUED and job.attempt == 0 and job.lost == 0
    assert claim_one(rstore).id == job_id


def test_an_idle_registration_ends_at_its_expiry(rstore: RedisStore) -> None:
    assert rstore.claim_wait("idle-w", ["default"], 2, 0.2) == []
    expires = rstore.now() + 0.2
    wait_for(lambda: rstore.now() > expires + 0.05, timeout=5.0)
    job_id = enqueue_one(rstore, new_job())
    assert get(rstore, job_id).state == JobState.QUEUED


def test_an_idle_worker_keeps_the_free_slots_it_registered(rstore: RedisStore) -> None:
    assert rstore._claim("idle-w", ["default"], 3, 30.0)[0] == []
    ids = [enqueue_one(rstore, new_job(i)) for i in range(5)]
    states = [get(rstore, i).state for i in ids]
    assert states == [JobState.RUNNING] * 3 + [JobState.QUEUED] * 2
    inbox = rstore.keys.inbox("idle-w")  # three entries, one expiry (a safety net)
    assert rstore._client.llen(inbox) == 3 and 0 < rstore._client.ttl(inbox) <= 3600


def test_stop_waiting_ends_the_registration_and_gives_back_its_jobs(rstore: RedisStore) -> None:
    assert rstore._claim("idle-w", ["default"], 2, 30.0)[0] == []
    handed = enqueue_one(rstore, new_job(1))
    rstore.stop_waiting("idle-w")
    later = enqueue_one(rstore, new_job(2))
    assert get(rstore, handed).state == JobState.QUEUED and get(rstore, handed).attempt == 0
    assert get(rstore, later).state == JobState.QUEUED
    assert [j.id for j in claim(rstore, limit=5)] == [handed, later]


def test_a_job_handed_to_a_worker_that_dies_comes_back_when_its_lease_expires(
    rstore: RedisStore,
) -> None:
    """The worker registered as idle and died before taking its inbox: the
    job it was given is leased to it, so the lease brings it back (lost 1)."""
    assert rstore._claim("dead-w", ["default"], 2, 30.0)[0] == []
    job_id = enqueue_one(rstore, new_job(lease=0.3, max_lost=3))
    assert get(rstore, job_id).worker == "dead-w"
    wait_expired(rstore, job_id)
    assert rstore.recover() == [job_id]
    assert get(rstore, job_id).lost == 1
    taken = claim_one(rstore, worker="healthy")
    assert (taken.id, taken.attempt, taken.lost) == (job_id, 2, 1)


def test_a_job_handed_straight_to_an_idle_worker_is_claimed_in_full(rstore: RedisStore) -> None:
    """A lone job without limits skips the ready structure on its way to an idle
    worker: what the worker gets, and what the store shows, are a claim's."""
    assert rstore._claim("idle-w", ["default"], 2, 30.0)[0] == []
    job = new_job("héllo, 世界", 7, timeout=5.0, lease=12.0, max_attempts=4)
    job_id = enqueue_one(rstore, job)
    (taken,) = claim(rstore, ["default"], limit=2, worker="idle-w")
    assert taken.payload == job.payload
    stored = get(rstore, job_id)
    assert (taken.id, taken.attempt, taken.max_attempts, taken.lost) == (job_id, 1, 4, 0)
    assert (taken.timeout, taken.lease, taken.queue, taken.task) == (5.0, 12.0, "default", "task")
    assert taken.started_at == taken.enqueued_at == stored.enqueued_at == taken.run_at
    assert stored.state == JobState.RUNNING and stored.worker == "idle-w"
    assert rstore.extend([lease(taken)]) == ["held"]
    assert succeed(rstore, taken)
    counts = rstore.queues()[0].counts
    assert counts.get(JobState.RUNNING, 0) == 0 and counts[JobState.SUCCEEDED] == 1


def test_a_due_job_goes_to_an_idle_worker_before_a_new_one(rstore: RedisStore) -> None:
    """A delayed job that came due while the worker was idle was not yet claimable
    (claims make it so): a job sent then does not overtake it."""
    assert rstore._claim("idle-w", ["default"], 1, 30.0)[0] == []
    due = enqueue_one(rstore, new_job("due", delay=0.2))
    ready_at = rstore.now() + 0.2
    wait_for(lambda: rstore.now() > ready_at + 0.02, timeout=5.0)
    fresh = enqueue_one(rstore, new_job("fresh"))
    assert [j.id for j in claim(rstore, ["default"], limit=1, worker="idle-w")] == [due]
    assert get(rstore, fresh).state == JobState.QUEUED
    assert claim_one(rstore).id == fresh


def test_a_job_handed_to_a_waiting_worker_arrives_whole(rstore: RedisStore) -> None:
    """What the waiting worker pops from its inbox decodes to the job as sent."""
    got: list[list[ClaimedJob]] = []
    waiter = threading.Thread(
        target=lambda: got.append(rstore.claim_wait("idle-w", ["default"], 4, 10.0))
    )
    waiter.start()
    wait_for(lambda: rstore._idle is not None, timeout=5.0)
    job = new_job("héllo, 世界", {"n": 1.5}, timeout=2.5, lease=9.0, max_attempts=3)
    enqueue_one(rstore, job)
    waiter.join(10.0)
    ((taken,),) = got
    stored = get(rstore, job.id)
    assert (taken.id, taken.payload, taken.timeout, taken.lease) == (job.id, job.payload, 2.5, 9.0)
    assert (taken.attempt, taken.max_attempts, taken.lost, taken.schedule) == (1, 3, 0, None)
    assert taken.started_at == taken.enqueued_at == stored.enqueued_at and taken.fire_time is None
    assert rstore.extend([lease(taken)]) == ["held"] and succeed(rstore, taken)


def test_the_direct_hand_off_leaves_what_the_long_way_leaves(rstore: RedisStore) -> None:
    """enqueue.lua writes the direct hand-off out on its own (the latency path);
    a job sent that way and one handed the long way (a unique key makes L.enqueue
    hand it through a claim) leave the same record and the same inbox row."""
    assert rstore._claim("idle-w", ["default"], 3, 30.0)[0] == []
    retry = '{"backoff":[3.0,30.0]}'
    fields = {"timeout": 5.0, "lease": 12.0, "max_attempts": 4, "priority": 2, "max_lost": 5}
    fields |= {"retry": retry}
    direct = enqueue_one(rstore, new_job("a", **fields))
    long_way = enqueue_one(rstore, new_job("b", unique_key="u:b", **fields))
    client = rstore._client
    records = [client.hgetall(rstore.keys.job(i)) for i in (direct, long_way)]
    differ = {b"id", b"payload", b"seq", b"vtime", b"token", b"expires", b"ukey"}
    differ |= {b"enqueued_at", b"run_at", b"started_at"}
    assert records[1].keys() - records[0].keys() == {b"ukey"}
    assert {k: v for k, v in records[0].items() if k not in differ} == {
        k: v for k, v in records[1].items() if k not in differ
    }
    assert records[0][b"state"] == b"running" and records[0][b"owner"] == b"idle-w"
    entries = client.lrange(rstore.keys.inbox("idle-w"), 0, -1)
    (slots_a, (a,)), (slots_b, (b,)) = (_codec.handed_jobs(e) for e in entries)
    assert (slots_a, slots_b) == (2, 1) and (a.id, b.id) == (direct, long_way)
    same = ("task", "queue", "attempt", "max_attempts", "lost", "lease", "timeout", "schedule")
    assert [getattr(a, f) for f in same] == [getattr(b, f) for f in same]
    assert a.retry == b.retry == retry
    assert a.started_at == a.enqueued_at == a.run_at and a.fire_time is None
    for job, record in zip((a, b), records, strict=True):
        assert job.token == record[b"token"].decode()
        assert job.started_at == get(rstore, job.id).started_at


def test_a_handed_job_whose_lease_ran_out_during_a_stall_is_not_returned(
    rstore: RedisStore,
) -> None:
    """A job handed to an idle worker waits in its inbox; if the worker stalls
    longer than the lease, the store gives the job to another worker, and the
    stalled one, popping it late, must drop it rather than run it twice."""
    enqueue_one(rstore, new_job(lease=0.3))
    (stale,) = rstore.claim("stalled", ["default"], 1)
    wait_for(lambda: rstore.recover() != [], 10, 0.05, "the lease to run out")
    (moved,) = rstore.claim("other", ["default"], 1)
    assert moved.id == stale.id

    assert rstore._still_held([stale], waited=0.5) == []
    assert rstore._still_held([stale], waited=0.1) == [stale]  # too short to have lost it
    assert rstore._still_held([moved], waited=0.5) == [moved]
