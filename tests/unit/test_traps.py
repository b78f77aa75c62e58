"""The first-hour traps: unserved queues, overdue schedules, missing or malformed
store URLs, app files that do not import, key functions, retry filters and
``rota send --wait``, through the CLI (in-process) and a real SQLite store."""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from starlette.testclient import TestClient

import rota
from rota.cli import main
from rota.errors import InvalidArgument, JobTimeout
from rota.models import JobState, Outcome, WorkerInfo
from rota.stores import open_store
from rota.web import create_app
from rota.worker import runner

pytestmark = pytest.mark.usefixtures("isolated_imports")

APP_SOURCE = """
    import rota

    app = rota.App("sqlite:///{db}")

    @app.task(queue="crawl")
    def fetch(url):
        return url

    @app.task
    def add(a, b):
        return a + b

    @app.task(retries=3, no_retry_on=TypeError)
    def strict(kind):
        raise TypeError("bad argument") if kind == "type" else ValueError("flaky")

    @app.task(retries=3, retry_on=(ConnectionError,))
    def picky():
        raise ValueError("not a connection error")
"""


@pytest.fixture
def app_file(tmp_path: Path) -> Path:
    path = tmp_path / "trapsapp.py"
    path.write_text(textwrap.dedent(APP_SOURCE).replace("{db}", str(tmp_path / "rota.db")))
    return path


@pytest.fixture
def app(app_file: Path) -> Iterator[rota.App]:
    from rota._loader import load_app

    loaded = load_app(f"{app_file}:app")
    yield loaded
    loaded.close()


def rota_cli(*args: str, cwd: Path | None = None) -> Result:
    runner = CliRunner(env={"ROTA_URL": None, "ROTA_DEBUG": None, "COLUMNS": None})
    if cwd is None:
        return runner.invoke(main, list(args), catch_exceptions=False)
    before = os.getcwd()
    os.chdir(cwd)
    try:
        return runner.invoke(main, list(args), catch_exceptions=False)
    finally:
        os.chdir(before)


def heartbeat(app: rota.App, *queues: str, host: str = "host-a") -> None:
    """A worker heartbeat in the store, as a running worker of ``host`` sends it."""
    worker = WorkerInfo(f"w-{host}", host, 4242, queues, 4, "threads", 0, 0.0)
    app.store.heartbeat(worker)


# -- unserved queues and overdue schedules -------------------------------------------


def test_status_warns_about_a_queue_no_live_worker_serves(app: rota.App) -> None:
    app.get_task("fetch").send("https://example.com")
    heartbeat(app, "default")
    result = rota_cli("--url", app.url, "status")
    assert result.exit_code == 0, result.output
    assert (
        "warning: 1 job waits: no live worker serves queue 'crawl' (workers serve: default)"
        in result.stdout
    )


def test_status_has_no_warning_when_the_queue_is_served(app: rota.App) -> None:
    app.get_task("fetch").send("https://example.com")
    heartbeat(app, "default", "crawl")
    result = rota_cli("--url", app.url, "status")
    assert result.exit_code == 0, result.output
    assert "warning:" not in result.stdout


def test_result_timeout_says_which_queue_no_worker_serves(app: rota.App) -> None:
    handle = app.get_task("fetch").send("https://example.com")
    heartbeat(app, "default")
    with pytest.raises(JobTimeout) as info:
        handle.result(timeout=0.05)
    assert str(info.value) == (
        f"job {handle.id} is still queued after 0.05 s: no live worker serves queue 'crawl' "
        "(workers serve: default)"
    )


def test_result_timeout_without_any_live_worker(app: rota.App) -> None:
    handle = app.get_task("add").send(1, 2)
    with pytest.raises(JobTimeout, match=r"no live worker serves queue 'default' \(no worker"):
        handle.result(timeout=0.05)


# -- jobs sent to a host whose workers are gone ----------------------------------------

WAITS_FOR_WEB_3 = (
    "no live worker of host 'web-3' serves queue 'default': a worker of another host takes "
    "the job once host 'web-3' has been gone from the queue for its --host-grace (5 minutes "
    "by default)"
)


def test_result_timeout_says_no_live_worker_of_the_jobs_host_serves_its_queue(
    app: rota.App,
) -> None:
    handle = app.get_task("add").options(host="web-3").send(1, 2)
    heartbeat(app, "default")  # of host-a: it may not take the job yet
    with pytest.raises(JobTimeout) as info:
        handle.result(timeout=0.05)
    assert str(info.value) == f"job {handle.id} is still queued after 0.05 s: {WAITS_FOR_WEB_3}"


def test_a_queued_job_of_a_gone_host_says_why_it_waits_and_stops_once_one_serves(
    app: rota.App,
) -> None:
    handle = app.get_task("add").options(host="web-3").send(1, 2)
    heartbeat(app, "default", host="web-1")
    shown = rota_cli("--url", app.url, "jobs", "show", handle.id)
    assert shown.exit_code == 0, shown.output
    assert f"warning: this job waits: {WAITS_FOR_WEB_3}" in " ".join(shown.stdout.split())
    with TestClient(
        create_app(app), base_url="http://127.0.0.1", client=("127.0.0.1", 50000)
    ) as client:
        page = client.get(f"/jobs/{handle.id}").text
        assert 'id="waiting"' in page
        assert WAITS_FOR_WEB_3.replace("'", "&#39;") in " ".join(page.split())

        heartbeat(app, "default", host="web-3")  # a worker of its host serves the queue now
        assert 'id="waiting"' not in client.get(f"/jobs/{handle.id}").text
    shown = rota_cli("--url", app.url, "jobs", "show", handle.id)
    assert "waits" not in shown.stdout
    with pytest.raises(JobTimeout) as info:
        handle.result(timeout=0.05)
    assert str(info.value) == f"job {handle.id} is still queued after 0.05 s"


def test_a_wait_that_ends_on_a_job_given_back_says_why(app: rota.App) -> None:
    handle = app.get_task("add").send(1, 2)
    [job] = app.store.claim("w", ["default"], 1)
    gave_back = "UnknownTask: ... (waiting for a worker that has it)"
    snooze = Outcome(job.id, job.token, ok=False, error=gave_back, retry_in=10, snooze=True)
    assert app.store.finish([snooze]) == [True]
    with pytest.raises(JobTimeout) as info:
        handle.result(timeout=0.05)
    assert str(info.value) == (
        f"job {handle.id} is still scheduled after 0.05 s (its last error: {gave_back})"
    )


def test_a_queued_job_of_a_paused_queue_says_so_on_its_page(app: rota.App) -> None:
    handle = app.get_task("add").send(1, 2)
    heartbeat(app, "default")
    app.admin.pause_queue("default")
    shown = rota_cli("--url", app.url, "jobs", "show", handle.id)
    assert "warning: this job waits: queue 'default' is paused" in shown.stdout


def test_a_queued_job_held_by_its_flow_control_keys_says_which(app: rota.App) -> None:
    site = rota.Limit("site", 1)
    spider = app.task(name="spider", concurrency=site, breaker=rota.Breaker(1, 60, key="flaky"))(
        lambda: None
    )
    heartbeat(app, "default")
    first, second = spider.send(), spider.send()
    (claimed,) = app.store.claim("w-host-a", ["default"], 2)
    assert claimed.id == first.id  # it runs: the second waits for its slot
    why = "key 'site' is at its limit (1 running of 1)"
    assert (
        f"warning: this job waits: {why}"
        in rota_cli("--url", app.url, "jobs", "show", second.id).stdout
    )
    with pytest.raises(JobTimeout, match=re.escape(why)):
        second.result(timeout=0.05)

    app.store.finish([Outcome(claimed.id, claimed.token, False, error="down")])  # opens "flaky"
    app.admin.set_limit("site", 0)
    shown = " ".join(rota_cli("--url", app.url, "jobs", "show", second.id).stdout.split())
    held = "key 'site' is held at 0 (`rota limits set`)"
    assert f"this job waits: {held}; the breaker of key 'flaky' is open for 5" in shown

    app.admin.set_limit("site", None)
    app.admin.reset_breaker("flaky")
    assert "waits" not in rota_cli("--url", app.url, "jobs", "show", second.id).stdout


def _overdue_schedule(app: rota.App) -> None:
    stored = app.schedule("nightly", "add", rota.every(3600), args=(1, 2))
    app.store.upsert_schedule(
        dataclasses.replace(stored, name="late", next_fire=app.store.now() - 600)
    )


def test_an_overdue_schedule_is_shown_overdue_not_active(app: rota.App) -> None:
    _overdue_schedule(app)
    listed = rota_cli("--url", app.url, "schedules", "list")
    assert listed.exit_code == 0, listed.output
    late = next(line for line in listed.stdout.splitlines() if line.startswith("late"))
    nightly = next(line for line in listed.stdout.splitlines() if line.startswith("nightly"))
    assert "overdue" in late and "overdue" not in nightly
    assert "schedule 'late' is overdue by 10m 0" in listed.stderr
    assert "is a scheduler running? (`rota scheduler` or `rota run`)" in listed.stderr
    status = rota_cli("--url", app.url, "status")
    assert "warning: schedule 'late' is overdue by 10m 0" in status.stdout
    shown = rota_cli("--url", app.url, "schedules", "show", "late")
    assert "overdue" in shown.stdout


def test_the_dashboard_shows_the_warnings(app: rota.App) -> None:
    app.get_task("fetch").send("https://example.com")
    _overdue_schedule(app)
    with TestClient(
        create_app(app), base_url="http://127.0.0.1", client=("127.0.0.1", 50000)
    ) as client:
        overview = client.get("/").text
        schedules = client.get("/schedules").text
    assert 'id="warnings"' in overview
    assert "no live worker serves queue &#39;crawl&#39; (no worker is live)" in overview
    assert "schedule &#39;late&#39; is overdue by" in overview
    assert ">overdue</span>" in schedules


# -- store URLs ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["status"],
        ["jobs", "list"],
        ["queues", "list"],
        ["limits", "list"],
        ["schedules", "list"],
        ["schedules", "show", "x"],
        ["scheduler"],  # without APP: nothing to fire but what a store holds
    ],
)
def test_read_only_commands_refuse_a_missing_sqlite_file(
    tmp_path: Path, command: list[str]
) -> None:
    result = rota_cli("--url", "sqlite:///rota.db", *command, cwd=tmp_path)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: no SQLite store at {tmp_path / 'rota.db'}")
    assert list(tmp_path.iterdir()) == []  # nothing created


def test_the_hint_of_a_missing_store_names_only_commands_that_create_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    status = rota_cli("status", cwd=tmp_path)  # no --url, no ROTA_URL: ./rota.db
    assert status.exit_code == 1
    assert status.stderr.rstrip().endswith(
        "; a worker, `rota run` or `rota send APP TASK` creates it"
    ), status.stderr
    # `rota send --cmd` without APP does not: it sends to ./rota.db only if it exists
    refused = rota_cli("send", "--cmd", "--", "echo", "hi", cwd=tmp_path)
    assert refused.exit_code == 1 and "no store given" in refused.stderr, refused.output
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "hintapp.py").write_text(
        textwrap.dedent("""
        import rota

        app = rota.App()  # the default store, ./rota.db

        @app.task()
        def add(a, b):
            return a + b
        """)
    )
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "hintapp", raising=False)
    sent = rota_cli("send", "hintapp.py:app", "add", "1", "2", cwd=tmp_path)
    assert sent.exit_code == 0, sent.output
    sys.modules.pop("hintapp", None)
    assert rota_cli("status", cwd=tmp_path).exit_code == 0


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("sqlite:/rota.db", "needs three slashes after 'sqlite:': sqlite:///rota.db for a rel"),
        ("sqlite:rota.db", "sqlite:////abs/path for an absolute one"),
        ("sqlite://rota.db", "names a host, not a file"),
        ("sqlite:///", "names no file"),
        ("mysqlx://h/db", "unsupported store URL scheme 'mysqlx'"),
        ("rota.db", "store URL 'rota.db' has no scheme"),
        ("", "the store URL is empty"),
        ("redis://localhost:99999/0", "bad port '99999': use a number from 1 to 65535"),
        ("redis://localhost:port/0", "bad port 'port'"),
        ("redis://:pw@localhost:0/0", "'redis://:***@localhost:0/0' has port 0"),
        ("redis://localhost/zero", "names database 'zero': a database is a number"),
        ("redis:/localhost", "needs '//' after 'redis:'"),
        ("unix://", "names no socket"),
    ],
)
def test_malformed_store_urls_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str, message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidArgument) as info:
        open_store(url)
    assert message in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_the_cli_refuses_a_one_slash_sqlite_url(tmp_path: Path) -> None:
    result = rota_cli("--url", "sqlite:/rota.db", "status", cwd=tmp_path)
    assert result.exit_code == 2
    assert "sqlite:///rota.db for a relative path" in result.stderr
    assert list(tmp_path.iterdir()) == []


# -- app files that do not import ----------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import rota\napp = rota.App()\ndef f(:\n    pass\n", "SyntaxError: invalid syntax"),
        ("import rota\n\nx = undefined_name\n", "NameError: name 'undefined_name' is not defined"),
        ("import rota_no_such_dependency\n", "no module named 'rota_no_such_dependency'"),
    ],
)
def test_an_app_file_that_does_not_import_gets_a_short_error(
    tmp_path: Path, source: str, expected: str
) -> None:
    path = tmp_path / "brokenapp.py"
    path.write_text(source)
    result = rota_cli("send", f"{path}:app", "t")
    assert result.exit_code == 2
    assert expected in result.stderr
    line = {"Syn": 3, "Nam": 3, "no ": 1}[expected[:3]]
    assert f"{path}, line {line})" in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.splitlines()) <= 3
    assert "--traceback or ROTA_DEBUG=1" in result.stderr


def test_traceback_flag_shows_the_whole_traceback(tmp_path: Path) -> None:
    path = tmp_path / "brokenapp.py"
    path.write_text("x = 1 / 0\n")
    runner = CliRunner(env={"ROTA_URL": None})
    result = runner.invoke(main, ["--traceback", "send", f"{path}:app", "t"])
    assert isinstance(result.exception, rota.RotaError)
    assert isinstance(result.exception.__cause__, ZeroDivisionError)
    debug = CliRunner(env={"ROTA_URL": None, "ROTA_DEBUG": "1"})
    result = debug.invoke(main, ["send", f"{path}:app", "t"])
    assert isinstance(result.exception, rota.RotaError)
    assert isinstance(result.exception.__cause__, ZeroDivisionError)


# -- key functions ---------------------------------------------------------------------


def _app(tmp_path: Path) -> rota.App:
    return rota.App(f"sqlite:///{tmp_path / 'keys.db'}")


def test_a_one_argument_unique_key_gets_the_first_argument(tmp_path: Path) -> None:
    app = _app(tmp_path)

    @app.task(unique=lambda u: u)
    def fetch(url: str, depth: int = 0) -> None:
        return None

    first = fetch.send("https://a.example/", 1)
    again = fetch.send("https://a.example/", depth=2)
    other = fetch.send("https://b.example/", 1)
    assert again.duplicate and again.id == first.id
    assert not other.duplicate
    app.close()


def test_key_functions_get_arguments_by_name(tmp_path: Path) -> None:
    app = _app(tmp_path)

    @app.task(
        unique=lambda depth: f"d{depth}",
        concurrency=rota.Limit(key=lambda url: url.split("/")[2], limit=2),
    )
    def fetch(url: str, depth: int = 0) -> None:
        return None

    first = fetch.send("https://a.example/x", depth=1)
    assert fetch.send("https://b.example/y", 1).duplicate  # same depth
    job = app.store.get_job(first.id)
    assert job is not None and job.unique_key is not None
    assert job.unique_key.endswith(".fetch:d1")
    assert "a.example" in job.limit_keys
    app.close()


def test_a_key_function_with_kwargs_gets_every_argument_by_name(tmp_path: Path) -> None:
    """``**kw`` gets the whole call bound to the task's parameters, defaults
    filled in, so that f(1, 2), f(1, b=2) and f(1, 2, c=3) give one key, as
    unique=True hashes them; beside named parameters, it gets the rest."""
    app = _app(tmp_path)
    seen: list[dict[str, object]] = []

    def limit_key(**kw: object) -> str:
        seen.append(kw)
        return "-".join(f"{k}{v}" for k, v in sorted(kw.items()))

    @app.task(
        concurrency=rota.Limit(key=limit_key, limit=1),
        rate=rota.Rate("5/s", key=lambda a, **kw: f"a{a}-{sorted(kw)}"),
        unique=lambda **kw: f"u{sorted(kw.items())}",
    )
    def combine(a: int, b: int, c: int = 3) -> None:
        return None

    first = combine.send(1, 2)
    assert seen == [{"a": 1, "b": 2, "c": 3}]
    job = app.store.get_job(first.id)
    assert job is not None and job.limit_keys == ("a1-b2-c3", "a1-['b', 'c']")
    assert job.unique_key == f"{combine.name}:u[('a', 1), ('b', 2), ('c', 3)]"
    assert combine.send(1, b=2).duplicate and combine.send(1, 2, c=3).duplicate

    @app.task(concurrency=rota.Limit(key=limit_key, limit=1))
    def gather(a: int, *rest: int, opt: int = 1, **extra: int) -> None:
        return None

    gather.send(1, 2, 3, z=9)
    assert seen[-1] == {"a": 1, "rest": (2, 3), "opt": 1, "z": 9}
    app.close()


def test_a_key_function_that_fits_no_call_is_refused_at_decoration(tmp_path: Path) -> None:
    app = _app(tmp_path)
    with pytest.raises(InvalidArgument, match=r"key function <lambda>\(a, b, c\) cannot take"):

        @app.task(rate=rota.Rate("1/s", key=lambda a, b, c: a))
        def fetch(url: str) -> None:
            return None

    assert "fetch" not in [t.rpartition(".")[2] for t in app.tasks]
    app.close()


# -- retry filters ---------------------------------------------------------------------


def _run_once(
    app: rota.App, task: str | rota.Task[..., object], *args: object
) -> tuple[str, JobState, str | None]:
    """Send a job (of a task, or a task with per-call options), run one
    attempt of it as a worker does, report the outcome."""
    handle = (app.get_task(task) if isinstance(task, str) else task).send(*args)
    [claimed] = app.store.claim("w1", ["default"], 1)
    app.store.finish([runner.to_outcome(claimed, runner.run_sync(app, claimed))])
    job = app.store.get_job(handle.id)
    assert job is not None
    return handle.id, job.state, job.error


def test_no_retry_on_fails_the_job_at_once_and_says_why(app: rota.App) -> None:
    _, state, error = _run_once(app, "strict", "type")
    assert state is JobState.FAILED
    assert error == "TypeError: bad argument (not retried: TypeError is in no_retry_on)"
    _, state, error = _run_once(app, "strict", "value")
    assert state is JobState.SCHEDULED  # other errors are retried
    assert error == "ValueError: flaky"


def test_retry_on_retries_only_those_errors(app: rota.App) -> None:
    _, state, error = _run_once(app, "picky")
    assert state is JobState.FAILED
    assert error == (
        "ValueError: not a connection error (not retried: ValueError is not in retry_on)"
    )


def test_per_call_retry_filters_are_the_ones_the_worker_applies(app: rota.App) -> None:
    strict, picky = app.get_task("strict"), app.get_task("picky")
    _, state, error = _run_once(app, strict.options(no_retry_on=ValueError), "value")
    assert state is JobState.FAILED
    assert error == "ValueError: flaky (not retried: ValueError is in no_retry_on)"
    _, state, _ = _run_once(app, picky.options(retry_on=ValueError))
    assert state is JobState.SCHEDULED


def test_a_per_call_backoff_is_the_one_the_retry_waits(app: rota.App) -> None:
    """Equal jitter: the first retry waits between half the base and the base."""
    strict = app.get_task("strict")
    before = app.store.now()
    job_id, state, _ = _run_once(app, strict.options(backoff=(100, 500)), "value")
    job = app.store.get_job(job_id)
    assert state is JobState.SCHEDULED and job is not None
    assert 50 <= job.run_at - before <= 100 + (app.store.now() - before)
    job_id, _, _ = _run_once(app, strict, "value")  # the task's own: (1, 300)
    job = app.store.get_job(job_id)
    assert job is not None and job.run_at - app.store.now() <= 1


@pytest.mark.parametrize("value", ["TypeError", 3, (ValueError, "x"), [None]])
def test_retry_filters_take_exception_classes_only(tmp_path: Path, value: object) -> None:
    app = _app(tmp_path)
    with pytest.raises(InvalidArgument, match="retry_on takes exception classes"):
        app.task(no_retry_on=value)
    app.close()


# -- send --wait -----------------------------------------------------------------------


def test_send_wait_times_out_with_the_reason(app: rota.App, app_file: Path) -> None:
    result = rota_cli("send", f"{app_file}:app", "fetch", "u", "--wait", "--timeout", "0.2")
    assert result.exit_code == 1
    job_id = result.stdout.strip()
    assert result.stderr.strip() == (
        f"Error: job {job_id} is still queued after 0.2 s: no live worker serves queue "
        "'crawl' (no worker is live)"
    )


def test_send_timeout_needs_wait(app_file: Path) -> None:
    result = rota_cli("send", f"{app_file}:app", "add", "1", "2", "--timeout", "1")
    assert result.exit_code == 2
    assert "--timeout goes with --wait" in result.stderr
