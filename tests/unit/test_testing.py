"""rota.testing: inline mode, run_until_idle, the shared in-memory store and URL resolution.

The examples of docs/testing.md are the tests marked "docs/testing.md" below.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rota
import rota.testing
from rota import App, Limit, current_job
from rota.errors import InvalidArgument, JobFailed, JobTimeout
from rota.models import JobState

# -- a task module, as docs/testing.md shows it ---------------------------------

app = App()


@app.task
def add(a: int, b: int) -> int:
    return a + b


@app.task(retries=2, backoff=(60, 600))
def flaky(fail_times: int) -> int:
    attempt = current_job().attempt
    if attempt <= fail_times:
        raise ConnectionError(f"attempt {attempt} failed")
    return attempt


@app.task
def crawl(url: str, depth: int) -> str:
    if depth > 0:
        for n in range(2):
            crawl.send(f"{url}/{n}", depth - 1)
    return url


@app.task(unique=True)
def refresh(name: str) -> str:
    return name


@pytest.fixture
def inline_app() -> Iterator[App]:
    """docs/testing.md: every test of the module runs its jobs inline."""
    with rota.testing.inline(app):
        yield app


def test_send_runs_at_once(inline_app: App) -> None:
    """docs/testing.md"""
    handle = add.send(2, 3)
    assert handle.status() == "succeeded"
    assert handle.result() == 5


def test_failure_raises_job_failed(inline_app: App) -> None:
    """docs/testing.md"""
    with pytest.raises(JobFailed, match="attempt 1 failed"):
        flaky.options(retries=0).send(5).result()


def test_retries_without_sleeping(inline_app: App) -> None:
    """docs/testing.md"""
    started = time.perf_counter()
    handle = flaky.send(2)  # fails twice, then succeeds; backoff 60 s is skipped
    assert handle.result() == 3
    assert time.perf_counter() - started < 1.0
    job = handle.job()
    assert job.attempt == 3
    assert [e["event"] for e in job.history] == ["failed", "failed", "succeeded"]


def test_retries_exhausted_fail_as_a_worker_leaves_them(inline_app: App) -> None:
    handle = flaky.send(9)
    job = handle.job()
    assert job.state is JobState.FAILED
    assert job.attempt == job.max_attempts == 3
    assert job.error == "ConnectionError: attempt 3 failed"


def test_a_task_that_exits_fails_its_job_and_send_returns(inline_app: App) -> None:
    """A task's SystemExit (a sys.exit() in code it calls) fails the job as a
    worker fails it, instead of ending the test process from send()."""

    @inline_app.task(name="quits", retries=1)
    def quits() -> None:
        raise SystemExit(3)

    handle = quits.send()
    with pytest.raises(JobFailed, match=r"^job \S+ failed: SystemExit: 3"):
        handle.result()
    job = handle.job()
    assert (job.error, job.attempt) == ("SystemExit: 3", 2)  # retried as any error
    assert job.traceback is not None and "raise SystemExit(3)" in job.traceback


def test_children_run_after_the_parent(inline_app: App) -> None:
    """docs/testing.md"""
    crawl.send("https://example.com", 2)
    done = inline_app.store.queues()[0].counts[JobState.SUCCEEDED]
    assert done == 1 + 2 + 4


def test_current_job_inside_the_task(inline_app: App) -> None:
    @inline_app.task(name="whoami")
    def whoami() -> list[object]:
        job = current_job()
        return [job.id, job.task, job.attempt]

    handle = whoami.send()
    assert handle.result() == [handle.id, "whoami", 1]


def test_current_job_outside_a_job_points_to_inline() -> None:
    with pytest.raises(RuntimeError, match=r"rota\.testing\.inline"):
        current_job()


def test_unique_duplicate_is_the_stores(inline_app: App) -> None:
    """docs/testing.md"""
    first = refresh.options(unique_for=3600).send("feeds")
    again = refresh.options(unique_for=3600).send("feeds")
    assert again.duplicate and again.id == first.id
    assert not refresh.send("other").duplicate


def test_concurrency_limit_zero_holds_the_job(inline_app: App) -> None:
    held = add.options(concurrency=Limit("held", 1)).send  # key known to the store
    inline_app.limits.set("held", 0)
    handle = held(1, 1)
    assert handle.status() == "queued"
    with pytest.raises(JobTimeout):
        handle.result()  # inline: no timeout means no waiting
    inline_app.limits.set("held", None)
    assert handle.result(timeout=5) == 2  # runs once the limit lets it


def test_a_held_job_times_out_with_what_holds_it_not_a_missing_worker(inline_app: App) -> None:
    held = add.options(concurrency=Limit("held", 1)).send
    inline_app.limits.set("held", 0)
    with pytest.raises(JobTimeout) as caught:
        held(1, 1).result()
    assert "worker" not in str(caught.value)
    assert "a concurrency limit, rate limit or open breaker" in str(caught.value)
    inline_app.limits.set("held", None)


def test_a_job_waited_for_by_the_task_that_sent_it_times_out_saying_why(inline_app: App) -> None:
    @inline_app.task(name="parent")
    def parent() -> int:
        return add.send(1, 2).result()

    try:
        with pytest.raises(JobFailed) as caught:
            parent.send().result()
    finally:
        del inline_app.tasks["parent"]
    assert "the running task that sent it" in str(caught.value)
    assert "no live worker" not in str(caught.value)


def test_paused_queue_holds_jobs(inline_app: App) -> None:
    inline_app.store.pause_queue("default")
    handle = add.send(1, 2)
    assert handle.status() == "queued"
    inline_app.store.resume_queue("default")
    assert handle.result(timeout=5) == 3


def test_send_many_runs_every_job(inline_app: App) -> None:
    handles = add.send_many([(1, 1), {"a": 2, "b": 2}])
    assert [h.result() for h in handles] == [2, 4]


def test_send_in_runs_under_run_until_idle(inline_app: App) -> None:
    """docs/testing.md"""
    later = add.send_in(0.2, 1, 2)
    assert later.status() == "scheduled"
    summary = rota.testing.run_until_idle(inline_app, timeout=10)
    assert later.result() == 3
    assert (summary.succeeded, summary.failed, summary.waiting) == (1, 0, 0)


def test_send_at_far_away_stays_scheduled(inline_app: App) -> None:
    later = add.send_in(3600, 1, 2)
    summary = rota.testing.run_until_idle(inline_app, timeout=0.5)
    assert later.status() == "scheduled"
    assert summary.waiting == 1


def test_inline_store_is_private_and_given_back(tmp_path: Path) -> None:
    own = App(f"sqlite:///{tmp_path / 'own.db'}")
    own.task(name="noop")(lambda: None)
    with rota.testing.inline(own):
        own.get_task("noop").send()
        with (
            pytest.raises(InvalidArgument, match="already in inline mode"),
            rota.testing.inline(own),
        ):
            pass
    assert own.store.queues() == []  # the job went to the private store
    own.close()


def test_close_inside_inline_keeps_the_private_store(tmp_path: Path) -> None:
    own = App(f"sqlite:///{tmp_path / 'own.db'}")
    ran: list[str] = []
    own.task(name="charge")(ran.append)
    own.get_task("charge").send("real")  # waits in the real store for a real worker
    own.close()
    with rota.testing.inline(own):
        first = own.get_task("charge").send("test-a")
        own.close()  # code under test closes the app: the private store stays
        own.get_task("charge").send("test-b")
        assert first.status() == "succeeded"  # the private store kept its jobs
    assert ran == ["test-a", "test-b"]
    assert own.store.queues()[0].counts == {JobState.QUEUED: 1}
    own.close()


def test_inline_runs_in_milliseconds(inline_app: App) -> None:
    started = time.perf_counter()
    for n in range(100):
        assert add.send(n, 1).result() == n + 1
    per_job = (time.perf_counter() - started) / 100
    assert per_job < 0.02


# -- run_until_idle with a real worker, on every store ---------------------------


@pytest.fixture
def store_app(url: str) -> Iterator[App]:
    worked = App(url)
    yield worked
    worked.close()


def test_run_until_idle_doc_example(tmp_path: Path) -> None:
    """docs/testing.md"""
    app = rota.App(f"sqlite:///{tmp_path / 'test.db'}")

    @app.task(name="double")
    def double(n: int) -> int:
        return n * 2

    handles = double.send_many([(n,) for n in range(5)])
    summary = rota.testing.run_until_idle(app, timeout=20)
    assert [h.result() for h in handles] == [0, 2, 4, 6, 8]
    assert summary.succeeded == 5
    app.close()


def test_run_until_idle_with_a_real_worker(store_app: App) -> None:
    seen: list[int] = []
    lock = threading.Lock()

    @store_app.task(name="double", retries=1, backoff=(0.1, 0.1))
    def double(n: int) -> int:
        with lock:
            seen.append(n)
        if n == 3 and current_job().attempt == 1:
            raise ValueError("first try fails")
        return n * 2

    handles = double.send_many([(n,) for n in range(5)])
    summary = rota.testing.run_until_idle(store_app, timeout=20)
    assert [h.result() for h in handles] == [0, 2, 4, 6, 8]
    assert (summary.succeeded, summary.failed, summary.waiting) == (5, 1, 0)
    assert sorted(seen) == [0, 1, 2, 3, 3, 4]
    assert store_app.store.workers() == []  # stopped and deregistered


def test_run_until_idle_times_out_on_held_jobs(store_app: App) -> None:
    @store_app.task(name="blocked", concurrency=Limit("never", 1))
    def blocked() -> None:
        return None

    store_app.limits.set("never", 0)
    blocked.send()
    started = time.monotonic()
    with pytest.raises(JobTimeout, match="1 job"):
        rota.testing.run_until_idle(store_app, timeout=0.5)
    assert time.monotonic() - started < 10
    assert store_app.store.workers() == []


def test_run_until_idle_refuses_a_bad_timeout(store_app: App) -> None:
    with pytest.raises(InvalidArgument, match="timeout must be above 0, got 0"):
        rota.testing.run_until_idle(store_app, timeout=0)


def test_run_until_idle_takes_one_queue_name_or_a_list(store_app: App) -> None:
    @store_app.task(name="double")
    def double(n: int) -> int:
        return n * 2

    first = double.send(1)
    assert rota.testing.run_until_idle(store_app, queues="default", timeout=10).succeeded == 1
    assert first.status() == "succeeded"
    second = double.send(2)
    assert rota.testing.run_until_idle(store_app, queues=["default"], timeout=10).succeeded == 1
    assert second.status() == "succeeded"


@pytest.mark.parametrize(
    ("queues", "message"),
    [
        ([], "queues must name at least one queue"),
        (["no-such-queue"], "unknown queue 'no-such-queue'; the queues here are: default"),
        ("no-such-queue", "unknown queue 'no-such-queue'"),
        ([""], "queue must be a non-empty string"),
    ],
)
def test_run_until_idle_refuses_queues_that_run_nothing(
    store_app: App, queues: Any, message: str
) -> None:
    store_app.task(name="noop")(lambda: None)
    with pytest.raises(InvalidArgument, match=re.escape(message)):
        rota.testing.run_until_idle(store_app, queues=queues, timeout=1)
    assert store_app.store.workers() == []


def test_result_and_run_until_idle_take_durations(tmp_path: Path) -> None:
    own = App(f"sqlite:///{tmp_path / 'own.db'}")
    own.task(name="noop")(lambda: 7)
    own.admin.pause_queue("default")
    held = own.get_task("noop").send()
    with pytest.raises(JobTimeout, match="still queued"):
        held.result(timeout="50ms")
    own.admin.resume_queue("default")
    assert rota.testing.run_until_idle(own, timeout="5s").succeeded == 1
    assert held.result(timeout="1s") == 7
    own.close()


@pytest.mark.parametrize(
    ("timeout", "message"),
    [
        (-1, "timeout must not be negative, got -1"),
        (float("nan"), "timeout must be finite, not nan"),
        (float("inf"), "timeout must be finite, not inf"),
        ("soon", "timeout 'soon' is not a duration"),
        (True, "timeout must be a number of seconds"),
    ],
)
def test_result_refuses_a_bad_timeout(tmp_path: Path, timeout: Any, message: str) -> None:
    own = App(f"sqlite:///{tmp_path / 'own.db'}")
    own.task(name="noop")(lambda: 7)
    own.admin.pause_queue("default")
    held = own.get_task("noop").send()
    started = time.monotonic()
    with pytest.raises(InvalidArgument, match=re.escape(message)):
        held.result(timeout=timeout)
    assert time.monotonic() - started < 5
    with pytest.raises(InvalidArgument, match=re.escape(message)):
        rota.testing.run_until_idle(own, timeout=timeout)
    own.close()


# -- sqlite:///:memory: and URL resolution ----------------------------------------


def test_memory_store_is_shared_by_threads() -> None:
    mem = App("sqlite:///:memory:")
    mem.task(name="noop")(lambda: None)
    handle = mem.get_task("noop").send()
    seen: list[str] = []
    errors: list[BaseException] = []

    def look() -> None:
        try:
            seen.append(mem.handle(handle.id).status())
            mem.get_task("noop").send()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=look) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert errors == []
    assert seen == ["queued"] * 4
    assert mem.store.queues()[0].counts[JobState.QUEUED] == 5
    mem.close()


def test_memory_stores_are_separate() -> None:
    one, two = App("sqlite:///:memory:"), App("sqlite:///:memory:")
    one.task(name="noop")(lambda: None)
    one.get_task("noop").send()
    assert two.store.queues() == []
    one.close()
    two.close()


def test_rota_url_set_after_app_creation_is_honoured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    later = App()
    target = f"sqlite:///{tmp_path / 'env.db'}"
    monkeypatch.setenv("ROTA_URL", target)
    assert later.url == target
    later.task(name="noop")(lambda: None)
    later.get_task("noop").send()
    assert (tmp_path / "env.db").exists()
    monkeypatch.setenv("ROTA_URL", "sqlite:///elsewhere.db")
    assert later.url == target  # fixed once the store is open
    later.close()


def test_explicit_url_wins_over_rota_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROTA_URL", f"sqlite:///{tmp_path / 'env.db'}")
    assert App(f"sqlite:///{tmp_path / 'given.db'}").url.endswith("given.db")


def test_configure_before_first_use(tmp_path: Path) -> None:
    """docs/testing.md"""
    app = rota.App()
    app.configure(url=f"sqlite:///{tmp_path / 'test.db'}")
    app.task(name="noop")(lambda: None)
    app.get_task("noop").send()
    assert (tmp_path / "test.db").exists()
    app.close()


def test_configure_refused_once_the_store_is_open(tmp_path: Path) -> None:
    configured = App()
    configured.configure(url=f"sqlite:///{tmp_path / 'test.db'}")
    configured.task(name="noop")(lambda: None)
    configured.get_task("noop").send()
    with pytest.raises(InvalidArgument, match=r"already open .*app\.close\(\)"):
        configured.configure(url="sqlite:///other.db")
    assert configured.url.endswith("test.db")
    configured.close()
    configured.configure(url="sqlite:///:memory:")
    assert configured.store.queues() == []
    configured.close()


def test_configure_refuses_a_non_url() -> None:
    with pytest.raises(InvalidArgument, match="non-empty store URL"):
        App().configure(url="")
