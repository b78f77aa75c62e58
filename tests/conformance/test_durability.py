"""SQLite durability: fsync on every commit by default (but a claim's), a
URL option to opt down, and a full disk raised as a rota error with nothing
half-written."""

from __future__ import annotations

import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from backends import IN_CI
from conformance.support import all_jobs, new_job
from rota import App, RotaError
from rota.errors import InvalidArgument, StoreError
from rota.models import JobState
from rota.stores import open_store
from rota.stores.sqlite import SQLiteStore


def _synchronous(store: SQLiteStore) -> int:
    return int(store._conn().execute("PRAGMA synchronous").fetchone()[0])


def test_sqlite_commits_are_fsynced_by_default(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'rota.db'}")
    assert isinstance(store, SQLiteStore)
    try:
        assert _synchronous(store) == 2  # FULL
    finally:
        store.close()


@pytest.mark.parametrize(("option", "level"), [("normal", 1), ("NORMAL", 1), ("extra", 3)])
def test_sqlite_synchronous_can_be_chosen_in_the_url(
    tmp_path: Path, option: str, level: int
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'rota.db'}?synchronous={option}")
    assert isinstance(store, SQLiteStore)
    try:
        assert _synchronous(store) == level
    finally:
        store.close()


#: The calls counted (an ``strace -e`` expression).
SYNC_CALLS = "trace=fsync,fdatasync"


def require_strace() -> None:
    """Skip without strace (fail in CI)."""
    if shutil.which("strace") is None:
        if IN_CI:
            pytest.fail("strace is missing (CI=true: must not skip)")
        pytest.skip("strace is missing")


# Sends 20 jobs, claims them one call each, then reports each in a call of
# its own; then makes each other kind of write once (a schedule saved and
# fired, a cancel, a retry by hand, a queue paused, a lost lease recovered).
# Names each step on stderr as it begins (argv: the store's URL).
_SYNC_SCRIPT = """
import sys, time
from rota._ids import unique_ids
from rota.models import NewJob, Outcome, Schedule
from rota.stores import open_store

def job(queue, **fields):
    return NewJob(unique_ids.next(), "t", queue, b"[]", **fields)

store = open_store(sys.argv[1])
sys.stderr.write("step:send\\n")
store.enqueue([job("q") for _ in range(20)])
sys.stderr.write("step:setup\\n")
doomed, cancelled, failed = job("lost", lease=0.2), job("cancel"), job("fail")
store.enqueue([doomed, cancelled, failed])
lost = store.claim("w", ["lost"], 1)[0]
failing = store.claim("w", ["fail"], 1)[0]
assert store.finish([Outcome(failing.id, failing.token, ok=False, error="E")]) == [True]
sys.stderr.write("step:claim\\n")
claimed = [store.claim("w", ["q"], 1)[0] for _ in range(20)]
sys.stderr.write("step:finish\\n")
for claimed_job in claimed:
    done = Outcome(claimed_job.id, claimed_job.token, ok=True, result=b"null")
    assert store.finish([done]) == [True]
sys.stderr.write("step:upsert_schedule\\n")
every = {"type": "every", "interval": 60.0}
store.upsert_schedule(Schedule("s", "t", every, b'{"args": [], "kwargs": {}}', next_fire=1000.0))
sys.stderr.write("step:fire_schedule\\n")
fire = job("q", schedule="s", fire_time=1000.0)
assert store.fire_schedule("s", 1000.0, 1060.0, fire) == "fired"
sys.stderr.write("step:cancel\\n")
assert store.cancel([cancelled.id]) == [True]
sys.stderr.write("step:retry\\n")
assert store.retry([failed.id]) == [True]
sys.stderr.write("step:pause_queue\\n")
store.pause_queue("q")
sys.stderr.write("step:wait\\n")
deadline = time.monotonic() + 10
while store.now() <= lost.started_at + lost.lease + 0.01 and time.monotonic() < deadline:
    time.sleep(0.01)
sys.stderr.write("step:recover\\n")
assert store.recover() == [lost.id]
sys.stderr.write("step:close\\n")
store.close()
"""


def _syncs_per_step(tmp_path: Path, option: str = "") -> dict[str, int]:
    """The fsync and fdatasync calls, counted by strace, of a process running
    ``_SYNC_SCRIPT`` on a fresh database, by the step they came in."""
    trace = tmp_path / "syncs.strace"
    url = f"sqlite:///{tmp_path / 'rota.db'}{option}"
    strace = ["strace", "-f", "-qq", "-e", f"{SYNC_CALLS},write", "-o", str(trace)]
    subprocess.run(
        [*strace, sys.executable, "-c", _SYNC_SCRIPT, url],
        check=True,
        capture_output=True,
        timeout=60,
    )
    steps, step = {"open": 0}, "open"
    for line in trace.read_text().splitlines():
        if "sync(" in line:
            steps[step] += 1
        elif 'write(2, "step:' in line:
            step = line.split('"step:')[1].split("\\")[0]
            steps[step] = 0
    return steps


def test_a_claim_is_not_synced_and_every_outcome_is(tmp_path: Path) -> None:
    # A claim lost to a power cut leaves its jobs queued, as a lease that
    # expires with its machine does: sends and outcomes wait for the disk.
    require_strace()
    synced = _syncs_per_step(tmp_path)
    assert synced["send"] >= 1
    assert synced["claim"] == 0  # 20 claims
    assert synced["finish"] >= 20  # 20 outcomes


#: The writes besides sends and outcomes that docs/guarantees.md says are synced.
OTHER_WRITES = ("upsert_schedule", "fire_schedule", "cancel", "retry", "pause_queue", "recover")


def test_schedules_operator_actions_and_recoveries_are_synced(tmp_path: Path) -> None:
    require_strace()
    synced = _syncs_per_step(tmp_path)
    assert {step: synced[step] for step in OTHER_WRITES if synced[step] < 1} == {}


def test_at_synchronous_normal_no_commit_is_synced(tmp_path: Path) -> None:
    require_strace()
    synced = _syncs_per_step(tmp_path, "?synchronous=normal")
    assert synced["send"] == synced["claim"] == synced["finish"] == 0
    assert [synced[step] for step in OTHER_WRITES] == [0] * len(OTHER_WRITES)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("synchronous=sometimes", "synchronous must be full (the default), extra, normal or off"),
        ("synchronous=", "synchronous must be full"),
        ("sync=normal", "unknown SQLite URL option(s) sync"),
    ],
)
def test_bad_sqlite_options_are_refused_and_create_nothing(
    tmp_path: Path, query: str, message: str
) -> None:
    path = tmp_path / "rota.db"
    with pytest.raises(InvalidArgument) as caught:
        open_store(f"sqlite:///{path}?{query}")
    assert message in str(caught.value)
    assert not path.exists()


class FullDisk:
    """A directory on a filesystem of ``size`` bytes (a tmpfs mounted for the
    test); where mounting is not allowed, a database capped by SQLite's
    ``max_page_count``, which fails with the same SQLITE_FULL error."""

    def __init__(self, root: Path, size: int) -> None:
        self.dir = root / "small"
        self.dir.mkdir()
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(self.dir)],
            capture_output=True,
        )
        self.mounted = mounted.returncode == 0
        self.size = size

    def open(self) -> SQLiteStore:
        store = open_store(f"sqlite:///{self.dir / 'rota.db'}")
        assert isinstance(store, SQLiteStore)
        if not self.mounted:  # this thread's connection is the one that writes
            store._conn().execute(f"PRAGMA max_page_count = {self.size // 4096}")
        return store

    def unmount(self) -> None:
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.dir)], check=True)


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[FullDisk]:
    disk = FullDisk(tmp_path, 512 * 1024)
    yield disk
    disk.unmount()


def test_a_full_disk_is_a_store_error_and_keeps_nothing_half_written(
    full_disk: FullDisk,
) -> None:
    store = full_disk.open()
    try:
        accepted: list[str] = []
        with pytest.raises(StoreError) as caught:
            for _ in range(1000):  # 1000 x 10 KB overflows 512 KB
                batch = [new_job("x" * 2_000, n) for n in range(5)]
                accepted += [r.id for r in store.enqueue(batch)]
        assert isinstance(caught.value, RotaError)
        assert "full" in str(caught.value)
        assert accepted, "the disk filled before the first batch"
        jobs = all_jobs(store)  # reads still work, and see whole batches only
        assert sorted(j.id for j in jobs) == sorted(accepted)
        assert {j.state for j in jobs} == {JobState.QUEUED}
        assert len(accepted) % 5 == 0
    finally:
        store.close()


def test_a_full_disk_fails_a_send_with_a_rota_error(full_disk: FullDisk) -> None:
    store = full_disk.open()
    app = App(f"sqlite:///{full_disk.dir / 'rota.db'}")
    app.use_store(store)  # the store whose write limit is set (without a tmpfs)

    @app.task(name="blob")
    def blob(text: str) -> None:
        """Takes room on disk."""

    sent = 0
    try:
        with pytest.raises(RotaError) as caught:
            for _ in range(1000):
                blob.send(f"{uuid.uuid4().hex} " * 400)
                sent += 1
        assert isinstance(caught.value, StoreError)
        assert sent and len(all_jobs(store)) == sent
    finally:
        store.close()
