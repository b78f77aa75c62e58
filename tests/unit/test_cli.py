"""The ``rota`` command line, run in-process with click's CliRunner against a real
SQLite store in ``tmp_path``."""

from __future__ import annotations

import csv
import dataclasses
import importlib
import json
import os
import re
import signal
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import rota.cli
import rota.cli._export
from rota import _json
from rota._loader import load_app
from rota._time import format_duration
from rota.cli import main
from rota.cli._schedule_views import would_fire
from rota.cli._support import redact_text, resolve_queues, summary
from rota.cli.status import LOST_AFTER, worker_state
from rota.models import ClaimedJob, JobQuery, JobState, LeaseRef, LogChunk, Outcome, WorkerInfo
from rota.scheduling.scheduler import Scheduler
from rota.stores import Store, open_store
from rota.stores.base import MAX_LOG_PAGE, report_progress

pytestmark = pytest.mark.usefixtures("isolated_imports")

APP_SOURCE = """
    import rota

    app = rota.App("sqlite:///{own_db}")

    @app.task
    def add(a, b):
        return a + b

    @app.task(name="tools.echo")
    def echo(*args, **kwargs):
        return [args, kwargs]

    @app.task(unique=True)
    def once(x):
        return x

    @app.task(queue="crawl", retries=2, concurrency=rota.Limit("spiders", 2))
    def fetch(url):
        return url

    @app.task(queue="fragile", breaker=rota.Breaker(failures=1, cooldown=600, key="flaky"))
    def fragile():
        return None

    @app.task(queue="polite", rate=rota.Rate("100/s", burst=2, key="site"))
    def polite():
        return None
"""


@dataclass
class Env:
    """A store, an app file using another store, and a way to run ``rota``."""

    tmp: Path
    url: str
    own_url: str
    app: str
    store: Store
    runner: CliRunner

    def rota(self, *args: str, input: str | None = None, url: bool = True) -> Result:
        """Run ``rota [--url URL] ARGS...`` in-process."""
        argv = ["--url", self.url, *args] if url else list(args)
        return self.runner.invoke(main, argv, input=input, catch_exceptions=False)

    def send(self, task: str, *args: str) -> str:
        """Send a job through the CLI; return its id."""
        result = self.rota("send", self.app, task, *args)
        assert result.exit_code == 0, result.output
        return result.stdout.strip()


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    own_db = tmp_path / "own.db"
    app_file = tmp_path / "cliapp.py"
    app_file.write_text(textwrap.dedent(APP_SOURCE).replace("{own_db}", str(own_db)))
    url = f"sqlite:///{tmp_path / 'rota.db'}"
    store = open_store(url)
    runner = CliRunner(env={"ROTA_URL": None, "COLUMNS": None, "TTY_COMPATIBLE": None})
    yield Env(tmp_path, url, f"sqlite:///{own_db}", f"{app_file}:app", store, runner)
    store.close()


def work(store: Store, queue: str, outcome: Callable[[ClaimedJob], Outcome]) -> list[str]:
    """Claim every runnable job of ``queue`` and finish each with ``outcome(job)``."""
    claimed = store.claim("test-worker", [queue], 100)
    assert all(store.finish([outcome(job) for job in claimed]))
    return [job.id for job in claimed]


def ok(result: Any) -> Callable[[ClaimedJob], Outcome]:
    return lambda job: Outcome(job.id, job.token, ok=True, result=_json.dumps(result))


def boom(job: ClaimedJob, retry: bool = False) -> Outcome:
    return Outcome(
        job.id,
        job.token,
        ok=False,
        error="ValueError: boom\nsecond line",
        traceback='Traceback (most recent call last):\n  File "cliapp.py"\nValueError: boom',
        retry_in=0.0 if retry else None,
    )


def state_of(env: Env, job_id: str) -> JobState:
    job = env.store.get_job(job_id)
    assert job is not None
    return job.state


# -- send ----------------------------------------------------------------------------


def test_send_parses_each_argument_as_json_or_string(env: Env) -> None:
    job_id = env.send("tools.echo", "hello", "3", "2.5", "true", "null", '{"a": [1]}', '"7"')
    job = env.store.get_job(job_id)
    assert job is not None
    assert job.task == "tools.echo"
    assert job.args == ["hello", 3, 2.5, True, None, {"a": [1]}, "7"]
    assert job.kwargs == {}
    assert job.queue == "default"
    assert job.state is JobState.QUEUED


def test_send_prints_only_the_id(env: Env) -> None:
    result = env.rota("send", env.app, "add", "1", "2")
    assert result.exit_code == 0
    assert result.stderr == ""
    (job_id,) = result.stdout.split()
    assert len(job_id) == 32
    job = env.store.get_job(job_id)
    assert job is not None
    assert job.args == [1, 2]


def test_send_arguments_starting_with_a_dash_after_double_dash(env: Env) -> None:
    job_id = env.send("add", "--", "-1", "-2")
    job = env.store.get_job(job_id)
    assert job is not None
    assert job.args == [-1, -2]


@pytest.mark.parametrize(
    ("payload", "args", "kwargs"),
    [
        ('{"args": [1], "kwargs": {"b": 2}}', [1], {"b": 2}),
        ('{"kwargs": {"a": 1, "b": 2}}', [], {"a": 1, "b": 2}),
        ("[4, 5]", [4, 5], {}),
    ],
)
def test_send_json(env: Env, payload: str, args: list[Any], kwargs: dict[str, Any]) -> None:
    job_id = env.send("add", "--json", payload)
    job = env.store.get_job(job_id)
    assert job is not None
    assert (job.args, job.kwargs) == (args, kwargs)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--json", "{nope"], "Invalid value for '--json': not valid JSON"),
        (["--json", "3"], "Invalid value for '--json': expected a JSON list of arguments"),
        (["--json", '{"args": 1}'], "Invalid value for '--json': \"args\" must be a JSON list"),
        (["--json", '{"kwargs": []}'], '"kwargs" must be a JSON object'),
        (["--json", '{"argz": []}'], "unexpected key(s) 'argz'"),
        (["1", "--json", "[2]"], "give the task's arguments as ARGS or with --json, not both"),
        (["--in", "soon"], "Invalid value for '--in': delay 'soon' is not a duration"),
        (["--priority", "high"], "'high' is not a valid integer"),
        (["-1", "2"], "-1 is read as an option: to send it as an argument, put -- before"),
        (["1", "-2.5"], "(rota send APP TASK -- -2.5 ...)"),
    ],
)
def test_send_bad_input_is_a_usage_error(env: Env, extra: list[str], message: str) -> None:
    result = env.rota("send", env.app, "add", *extra)
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.output
    assert env.store.queues() == []


def test_send_options_override_the_task(env: Env) -> None:
    before = env.store.now()
    job_id = env.send("fetch", "https://example.com", "--queue", "slow", "-p", "7", "--in", "1m")
    job = env.store.get_job(job_id)
    assert job is not None
    assert job.queue == "slow"
    assert job.priority == 7
    assert job.state is JobState.SCHEDULED
    assert before + 59 <= job.run_at <= env.store.now() + 61
    assert job.max_attempts == 3
    assert job.limit_keys == ("spiders",)


def test_send_unknown_task(env: Env) -> None:
    result = env.rota("send", env.app, "nope", "1")
    assert result.exit_code == 2  # bad input, as docs/guarantees.md section 7 says
    assert result.stdout == ""
    assert result.stderr.strip() == (
        "Error: unknown task 'nope' (registered: add, fetch, fragile, once, polite, tools.echo); "
        "register it with @app.task(name='nope') in the module the worker loads"
    )
    assert env.store.queues() == []


def test_send_bad_input_exits_2_with_one_line_whatever_refuses_it(env: Env) -> None:
    small = env.tmp / "smallapp.py"
    small.write_text(
        textwrap.dedent(f"""
        import rota

        app = rota.App("sqlite:///{env.tmp / "small.db"}", payload_cap=64)

        @app.task()
        def echo(text):
            return text
        """)
    )
    for words, message in (
        (["nope"], "unknown task 'nope' (registered: echo)"),  # UnknownTask
        (["echo", "x" * 100], "payload is "),  # PayloadTooLarge
        (["echo", "1e999"], "args[0] is inf, not JSON"),  # SerializationError
        (["echo"], "missing a required argument: 'text'"),  # InvalidArgument
    ):
        result = env.rota("send", f"{small}:app", *words)
        assert result.exit_code == 2, (words, result.output)
        assert message in result.stderr, (words, result.stderr)
        assert "Traceback" not in result.output
    assert env.store.queues() == []


def test_send_a_duplicate_says_so(env: Env) -> None:
    first = env.send("once", "42")
    result = env.rota("send", env.app, "once", "42")
    assert result.exit_code == 0
    assert result.stdout.strip() == first
    assert result.stderr.startswith(f"duplicate of {first}: ")
    assert "nothing new was enqueued" in result.stderr
    assert env.store.queues()[0].counts == {JobState.QUEUED: 1}


def test_send_bad_app_spec(env: Env) -> None:
    result = env.rota("send", str(env.tmp / "missing.py") + ":app", "add")
    assert result.exit_code == 2
    assert result.stderr.strip() == f"Error: app file '{env.tmp / 'missing.py'}' not found"
    bad_attribute = env.rota("send", env.app.replace(":app", ":add"), "add")
    assert bad_attribute.exit_code == 2
    assert "is a Task, not a rota App" in bad_attribute.stderr


def test_url_option_env_and_app_url(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    own = open_store(env.own_url)
    try:
        # Without --url the app's own URL is used.
        in_own = env.rota("send", env.app, "add", "1", "2", url=False)
        assert in_own.exit_code == 0, in_own.output
        assert own.get_job(in_own.stdout.strip()) is not None
        assert env.store.get_job(in_own.stdout.strip()) is None
        # --url after the command name overrides it too.
        after = env.rota("send", env.app, "add", "1", "2", "--url", env.url, url=False)
        assert env.store.get_job(after.stdout.strip()) is not None
        # So does ROTA_URL.
        by_env = env.runner.invoke(
            main, ["send", env.app, "add", "3", "4"], env={"ROTA_URL": env.url}
        )
        assert env.store.get_job(by_env.stdout.strip()) is not None
        listed = env.runner.invoke(main, ["jobs", "list"], env={"ROTA_URL": env.url})
        assert by_env.stdout.strip() in listed.stdout
        assert in_own.stdout.strip() not in listed.stdout
    finally:
        own.close()


# -- jobs list -------------------------------------------------------------------------


def test_jobs_list_shows_a_row_per_job(env: Env) -> None:
    first = env.send("add", "1", "2")
    crawl = env.send("fetch", "https://example.com/a")
    work(env.store, "crawl", boom)
    result = env.rota("jobs", "list")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "id",
        "task",
        "queue",
        "state",
        "attempt",
        "enqueued",
        "age",
        "error",
    ]
    rows = [line.split() for line in lines[1:]]
    # Newest first.
    assert [row[0] for row in rows] == [crawl, first]
    assert rows[0][1:5] == ["fetch", "crawl", "failed", "1/3"]
    assert rows[0][-3:] == ["ValueError:", "boom", "…"], "its first line; the rest elided"
    assert rows[1][1:5] == ["add", "default", "queued", "0/1"]


def test_jobs_list_keeps_one_line_per_job_whatever_its_command_and_error(env: Env) -> None:
    script = "echo one\necho two"
    sent = env.rota("send", "--cmd", "--", "sh", "-c", script)
    assert sent.exit_code == 0, sent.output
    job_id = sent.stdout.strip()
    [job] = env.store.claim("test-worker", ["default"], 1)
    error = "CommandFailed: exit code 1\nstderr: first\nstderr: second " + "x" * 200
    assert env.store.finish([Outcome(job_id, job.token, False, error=error)]) == [True]
    other = env.send("add", "1", "2")
    for columns in ("200", "80", "50"):  # wide, usual, narrow: never a row on two lines
        listed = env.runner.invoke(
            main, ["--url", env.url, "jobs", "list"], env={"COLUMNS": columns}
        )
        assert listed.exit_code == 0, listed.output
        lines = listed.stdout.splitlines()
        assert len(lines) == 3, (columns, listed.stdout)
        ids = [line.split()[0].rstrip("…") for line in lines]  # (cut when narrow)
        assert ids[0] == "id" and other.startswith(ids[1]) and job_id.startswith(ids[2]), ids
    wide = env.runner.invoke(main, ["--url", env.url, "jobs", "list"], env={"COLUMNS": "300"})
    [row] = [line for line in wide.stdout.splitlines() if line.startswith(job_id)]
    assert "rota.cmd: sh -c 'echo one …" in row and "CommandFailed: exit code 1 …" in row
    shown = env.rota("jobs", "show", job_id).stdout  # the whole of both
    assert "sh -c 'echo one\necho two'" in shown
    assert f"stderr: second {'x' * 200}" in " ".join(shown.split("\nerror\n", 1)[1].split())


def test_jobs_list_filters(env: Env) -> None:
    a = env.send("add", "1", "2")
    b = env.send("tools.echo", "needle-in-args")
    c = env.send("fetch", "https://example.com/")
    work(env.store, "crawl", ok("fine"))

    def ids(*args: str) -> list[str]:
        result = env.rota("jobs", "list", *args)
        assert result.exit_code == 0, result.output
        return [line.split()[0] for line in result.stdout.splitlines()[1:]]

    assert ids("--queue", "default") == [b, a]
    assert ids("--task", "add") == [a]
    assert ids("--state", "succeeded") == [c]
    assert ids("-s", "queued") == [b, a]
    assert ids("--search", "needle") == [b]
    assert env.rota("schedules", "add", "tick", "--every", "60", "--", "true").exit_code == 0
    d = env.rota("schedules", "run-now", "tick").stdout.strip()
    assert ids("--schedule", "tick") == [d]
    empty = env.rota("jobs", "list", "--task", "nothing")
    assert empty.exit_code == 0
    assert empty.stdout == ""
    assert empty.stderr.strip() == "no jobs match"


def _jobs_module() -> Any:
    """The module of the ``rota jobs`` commands the CLI runs now (the one
    ``rota.cli.jobs`` names may be an earlier load: see isolated_imports)."""
    return importlib.import_module("rota.cli.jobs")


def _steering_module() -> Any:
    """The module of the steering steps the ``rota jobs`` commands run now."""
    return importlib.import_module("rota.cli._steering")


def test_jobs_list_reads_on_past_empty_pages_that_have_a_cursor(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A store that scans only so many jobs per page (Redis: SCAN_CAP) answers
    # a rare match with empty pages that carry a cursor: not the end.
    sent = env.send("add", "1", "2")
    real = type(env.store).list_jobs
    calls: list[str | None] = []

    def scanning(self: Store, query: JobQuery, limit: int = 50, cursor: str | None = None) -> Any:
        calls.append(cursor)
        if cursor is None or cursor.startswith("scan"):
            n = 0 if cursor is None else int(cursor[4:])
            if n < 3:
                return type(real(self, query, limit=limit))((), f"scan{n + 1}")
            return real(self, query, limit=limit)
        return real(self, query, limit=limit, cursor=cursor)

    monkeypatch.setattr(type(env.store), "list_jobs", scanning)
    found = env.rota("jobs", "list", "--task", "add")
    assert found.exit_code == 0, found.output
    assert [line.split()[0] for line in found.stdout.splitlines()[1:]] == [sent]
    assert calls == [None, "scan1", "scan2", "scan3"]

    monkeypatch.setattr(_jobs_module(), "_SCAN_BUDGET", 0.0)  # out of time at once
    stopped = env.rota("jobs", "list", "--task", "add")
    assert stopped.exit_code == 0
    assert stopped.stdout == ""
    assert "no match in the jobs scanned so far" in stopped.stderr
    assert "the scan goes on: add --cursor scan1 to the same command" in stopped.stderr


def test_jobs_list_pages_with_a_cursor(env: Env) -> None:
    sent = [env.send("add", str(i), "0") for i in range(3)]
    first = env.rota("jobs", "list", "--limit", "2")
    assert [line.split()[0] for line in first.stdout.splitlines()[1:]] == sent[:0:-1]
    cursor = first.stderr.split("--cursor ")[1].split()[0]
    second = env.rota("jobs", "list", "--limit", "2", "--cursor", cursor)
    assert [line.split()[0] for line in second.stdout.splitlines()[1:]] == [sent[0]]
    assert "--cursor" not in second.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--state", "done"],
            "Error: Invalid value for '--state' / '-s': unknown state 'done'; expected one of: "
            "scheduled, queued, running, succeeded, failed, cancelled",
        ),
        (["--limit", "0"], "Invalid value for '--limit' / '-n': 0 is not in the range 1<=x<=1000"),
    ],
)
def test_jobs_list_bad_options(env: Env, args: list[str], message: str) -> None:
    result = env.rota("jobs", "list", *args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert result.stdout == ""


def test_store_errors_from_bad_input_exit_2(env: Env) -> None:
    result = env.rota("jobs", "list", "--cursor", "not-a-cursor")
    assert result.exit_code == 2
    assert result.stderr.strip() == "Error: bad cursor 'not-a-cursor'"
    scheme = env.runner.invoke(main, ["--url", "ftp://host/x", "queues", "list"])
    assert scheme.exit_code == 2
    assert scheme.stderr.startswith("Error: unsupported store URL scheme 'ftp'")


# -- jobs show -------------------------------------------------------------------------


def test_jobs_show_everything(env: Env) -> None:
    job_id = env.send("fetch", "--json", '{"kwargs": {"url": "https://example.com/x"}}')
    work(env.store, "crawl", lambda job: boom(job, retry=True))
    work(env.store, "crawl", lambda job: boom(job, retry=True))
    work(env.store, "crawl", boom)
    result = env.rota("jobs", "show", job_id)
    assert result.exit_code == 0
    out = result.stdout
    fields = {
        line.split(None, 1)[0]: line.split(None, 1)[1].strip()
        for line in out.split("\nargs")[0].splitlines()
        if " " in line.strip()
    }
    assert fields["id"] == job_id
    assert fields["task"] == "fetch"
    assert fields["queue"] == "crawl"
    assert fields["state"] == "failed"
    assert fields["attempt"] == "3/3"
    assert fields["retries"] == "up to 2, backoff 1 s doubling to 300 s"
    assert fields["priority"] == "0"
    assert "limit keys" in out and "spiders" in out.split("limit keys")[1].splitlines()[0]
    assert '"url": "https://example.com/x"' in out
    assert "\nerror\nValueError: boom\nsecond line\n" in out
    assert '\ntraceback\nTraceback (most recent call last):\n  File "cliapp.py"\n' in out
    history = out.split("attempts\n")[1].splitlines()
    assert history[0].split() == ["attempt", "event", "at", "worker", "host", "detail"]
    assert [row.split()[:2] for row in history[1:]] == [
        ["1", "failed"],
        ["2", "failed"],
        ["3", "failed"],
    ]
    assert all(row.split()[-3:] == ["ValueError:", "boom", "…"] for row in history[1:])


def test_jobs_show_a_snooze_as_a_wait_not_an_error(env: Env) -> None:
    job_id = env.send("add", "2", "3")
    why = "Snooze: the export is not ready"
    work(
        env.store,
        "default",
        lambda j: Outcome(j.id, j.token, False, error=why, retry_in=600.0, snooze=True),
    )
    out = env.rota("jobs", "show", job_id).stdout
    assert f"\nsnoozed (not an attempt)\n{why}\n" in out
    assert "\nerror\n" not in out


def test_jobs_show_result(env: Env) -> None:
    job_id = env.send("add", "2", "3")
    work(env.store, "default", ok({"sum": 5}))
    out = env.rota("jobs", "show", job_id).stdout
    assert "succeeded" in out
    assert '\nresult\n{\n  "sum": 5\n}\n' in out
    assert "\nargs\n[\n  2,\n  3\n]\n" in out
    assert "took" in out


def test_jobs_show_unknown_id(env: Env) -> None:
    result = env.rota("jobs", "show", "nopenope")
    assert result.exit_code == 1
    assert result.stderr == "Error: job 'nopenope' not found\n"
    short = env.rota("jobs", "show", "nope")
    assert short.stderr == (
        "Error: job 'nope' not found: no job has that id, "
        "and a prefix needs at least 6 characters\n"
    )


# -- retry, cancel, delete -----------------------------------------------------------------


def test_jobs_retry_ids(env: Env) -> None:
    failed = env.send("add", "1", "1")
    done = env.send("add", "2", "2")
    work(env.store, "default", lambda job: boom(job) if job.id == failed else ok(4)(job))
    result = env.rota("jobs", "retry", failed)
    assert result.exit_code == 0
    assert result.stdout == f"retried {failed}\n"
    assert state_of(env, failed) is JobState.QUEUED
    refused = env.rota("jobs", "retry", done, "missing")
    assert refused.exit_code == 1
    assert refused.stdout == ""
    assert f"could not retry {done}: job {done} is succeeded;" in refused.stderr
    assert "could not retry missing: not found" in refused.stderr
    assert "Error: 2 of 2 job(s) could not be retried" in refused.stderr


def test_jobs_retry_failed_by_queue_and_task(env: Env) -> None:
    a = env.send("add", "1", "1")
    b = env.send("tools.echo", "x")
    c = env.send("fetch", "https://example.com/")
    work(env.store, "default", boom)
    for _ in range(3):
        work(env.store, "crawl", lambda job: boom(job, retry=True))
    assert {state_of(env, j) for j in (a, b, c)} == {JobState.FAILED}
    result = env.rota("jobs", "retry", "--failed", "--queue", "default", "--task", "add")
    assert result.stdout == "retried 1 failed job(s)\n"
    assert [state_of(env, j) for j in (a, b, c)] == [
        JobState.QUEUED,
        JobState.FAILED,
        JobState.FAILED,
    ]
    result = env.rota("jobs", "retry", "--failed")
    assert result.stdout == "retried 2 failed job(s)\n"
    assert {state_of(env, j) for j in (a, b, c)} == {JobState.QUEUED}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["abc", "--failed"], "give job ids or --failed, not both"),
        ([], "give job ids to retry, or --failed"),
        (["abc", "--queue", "q"], "--queue and --task go with --failed"),
    ],
)
def test_jobs_retry_usage(env: Env, args: list[str], message: str) -> None:
    result = env.rota("jobs", "retry", *args)
    assert result.exit_code == 2
    assert f"Error: {message}" in result.stderr


def test_jobs_cancel(env: Env) -> None:
    running = env.send("add", "1", "1")
    pending = env.send("tools.echo", "x")
    [claimed] = env.store.claim("test-worker", ["default"], 1)
    assert claimed.id == running
    token = claimed.token
    result = env.rota("jobs", "cancel", pending)
    assert result.exit_code == 0
    assert result.stdout == f"cancelled {pending}\n"
    assert state_of(env, pending) is JobState.CANCELLED
    asked = env.rota("jobs", "cancel", running)  # its worker stops it
    assert asked.exit_code == 0
    assert (
        asked.stdout
        == f"cancelled {running} (it runs: its worker stops it within about a second: a "
        "command or a job in processes mode is killed, an async task cancelled, and a thread "
        "task stops when it checks cancelled)\n"
    )
    assert state_of(env, running) is JobState.RUNNING
    refused = env.rota("jobs", "cancel", running)
    assert refused.exit_code == 1
    assert f"could not cancel {running}: job {running} runs and was already asked to stop" in (
        refused.stderr
    )
    assert "Error: 1 of 1 job(s) could not be cancelled" in refused.stderr
    assert env.store.extend([LeaseRef(running, token)]) == ["cancel"]
    env.store.finish([Outcome(running, token, False, error="JobCancelled: stopped")])
    assert state_of(env, running) is JobState.CANCELLED
    shown = env.rota("jobs", "show", running)
    assert re.search(r"cancelled .* by \S+", shown.stdout), shown.stdout


def test_jobs_logs_says_when_it_gave_up_and_refuses_an_attempt_not_made(env: Env) -> None:
    job_id = env.send("add", "1", "1")
    env.store.claim("test-worker", ["default"], 1)  # running, and it stays so
    waited = env.rota("jobs", "logs", job_id, "--follow", "--timeout", "0.2")
    assert waited.exit_code == 1, waited.output
    assert f"job {job_id} is still running after --timeout 0.2 s" in waited.stderr
    silent = env.rota("jobs", "logs", job_id)
    assert (silent.exit_code, silent.stdout) == (0, "")
    assert silent.stderr == f"job {job_id} wrote nothing yet\n"
    beyond = env.rota("jobs", "logs", job_id, "--attempt", "2")
    assert beyond.exit_code == 1 and "has had 1 attempt(s), not 2" in beyond.stderr
    alone = env.rota("jobs", "logs", job_id, "--timeout", "5")
    assert alone.exit_code == 2 and "--timeout goes with --follow" in alone.output


def _run_and_fail(env: Env, job_id: str, line: str) -> None:
    """Claim job ``job_id``, have it write ``line`` and fail (no retries left)."""
    [job] = env.store.claim("test-worker", ["default"], 1)
    assert job.id == job_id
    env.store.append_logs([LogChunk(job_id, job.attempt, "stdout", line, env.store.now())])
    failed = Outcome(job_id, job.token, False, error="ValueError: no")
    assert env.store.finish([failed]) == [True]


def test_jobs_logs_follow_exits_1_when_the_job_ends_failed_or_cancelled(env: Env) -> None:
    failed = env.send("add", "1", "1")
    _run_and_fail(env, failed, "trying\n")
    followed = env.rota("jobs", "logs", failed, "--follow")
    assert followed.exit_code == 1, followed.output
    assert followed.stdout == "--- attempt 1 ---\ntrying\n"
    assert f"Error: job {failed} failed: ValueError: no" in followed.stderr
    plain = env.rota("jobs", "logs", failed)
    assert (plain.exit_code, plain.stdout) == (0, "--- attempt 1 ---\ntrying\n"), "not followed"

    cancelled = env.send("add", "2", "2")
    assert env.rota("jobs", "cancel", cancelled).exit_code == 0
    gone = env.rota("jobs", "logs", cancelled, "-f")
    assert gone.exit_code == 1, gone.output
    assert f"job {cancelled} wrote nothing\n" in gone.stderr
    assert f"Error: job {cancelled} was cancelled" in gone.stderr

    succeeded = env.send("add", "3", "3")
    [job] = env.store.claim("test-worker", ["default"], 1)
    env.store.finish([Outcome(succeeded, job.token, True, result=b"6")])
    assert env.rota("jobs", "logs", succeeded, "--follow").exit_code == 0
    helped = " ".join(env.rota("jobs", "logs", "--help").stdout.split())
    assert "exit 1 if it ends failed or cancelled" in helped
    assert "1 with --follow when the job ended failed or cancelled" in helped


def test_jobs_logs_heads_the_run_after_a_retry_by_hand_apart(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("USER", "ann")
    job_id = env.send("add", "1", "1")
    _run_and_fail(env, job_id, "first run\n")
    assert env.rota("jobs", "retry", job_id).exit_code == 0
    _run_and_fail(env, job_id, "second run\n")
    job = env.store.get_job(job_id)
    assert job is not None and job.attempt == 1, "a retry by hand counts attempts afresh"
    [requeued] = [h for h in job.history if h["event"] == "requeued"]
    when = rota.cli._support.fmt_time(requeued["at"])
    whole = (
        "--- attempt 1 ---\nfirst run\n"
        f"--- attempt 1, after requeue by ann at {when} ---\nsecond run\n"
    )
    for words in ((), ("--attempt", "1")):
        shown = env.rota("jobs", "logs", job_id, *words)
        assert (shown.exit_code, shown.stdout) == (0, whole), shown.output
    followed = env.rota("jobs", "logs", job_id, "--follow")
    assert (followed.exit_code, followed.stdout) == (1, whole)


def test_jobs_logs_reads_an_attempt_of_a_run_before_a_retry_by_hand(env: Env) -> None:
    job_id = env.send("fetch", "https://example.com/")
    for attempt in (1, 2):
        [job] = env.store.claim("test-worker", ["crawl"], 1)
        assert job.attempt == attempt
        env.store.append_logs([LogChunk(job_id, attempt, "stdout", f"try {attempt}\n")])
        assert env.store.finish([boom(job, retry=attempt == 1)]) == [True]
    assert state_of(env, job_id) is JobState.FAILED
    assert env.rota("jobs", "retry", job_id).exit_code == 0  # attempts count from 1 again
    shown = env.rota("jobs", "logs", job_id, "--attempt", "2")
    # (headed: after a requeue, the heading says which run it is; here the first)
    assert (shown.exit_code, shown.stdout) == (0, "--- attempt 2 ---\ntry 2\n"), shown.output
    beyond = env.rota("jobs", "logs", job_id, "--attempt", "3")
    assert beyond.exit_code == 1 and "has had 2 attempt(s), not 3" in beyond.stderr
    assert "after requeue by NAME" in " ".join(env.rota("jobs", "logs", "--help").stdout.split())


def test_jobs_logs_prints_a_log_longer_than_a_page_whole(env: Env) -> None:
    job_id = env.send("add", "1", "1")
    [job] = env.store.claim("test-worker", ["default"], 1)
    lines = [f"line {i:06d}\n" for i in range(MAX_LOG_PAGE + 5)]
    env.store.append_logs([LogChunk(job_id, 1, "stdout", line) for line in lines])
    env.store.finish([Outcome(job_id, job.token, True, result=b"2")])
    for follow in ((), ("--follow", "--timeout", "10")):
        shown = env.rota("jobs", "logs", job_id, *follow)
        assert shown.exit_code == 0, shown.output
        assert shown.stdout == "--- attempt 1 ---\n" + "".join(lines)


def test_jobs_delete(env: Env) -> None:
    a = env.send("add", "1", "1")
    b = env.send("add", "2", "2")
    result = env.rota("jobs", "delete", a, b, a)
    assert result.exit_code == 0
    assert result.stdout == f"deleted {a}\ndeleted {b}\n"
    assert env.store.get_jobs([a, b]) == [None, None]
    again = env.rota("jobs", "delete", a)
    assert again.exit_code == 1
    assert f"could not delete {a}: not found" in again.stderr


def test_jobs_subcommands_need_ids(env: Env) -> None:
    for command in ("cancel", "delete", "show"):
        result = env.rota("jobs", command)
        assert result.exit_code == 2
        assert "Missing argument 'ID" in result.stderr


# -- jobs export -------------------------------------------------------------------------------


def _finished(env: Env) -> dict[str, str]:
    """Two succeeded adds, one succeeded echo, one failed add; ids by label."""
    ids = {
        "add1": env.send("add", "1", "2"),
        "add2": env.send("add", "--json", '{"kwargs": {"a": "x", "b": "y"}}'),
        "echo": env.send("tools.echo", "hi"),
        "bad": env.send("add", "0", "0"),
    }
    results = {ids["add1"]: 3, ids["add2"]: "xy", ids["echo"]: [["hi"], {}]}

    def outcome(job: ClaimedJob) -> Outcome:
        return boom(job) if job.id == ids["bad"] else ok(results[job.id])(job)

    work(env.store, "default", outcome)
    return ids


def test_jobs_export_jsonl_to_stdout(env: Env) -> None:
    ids = _finished(env)
    result = env.rota("jobs", "export", "--task", "add")
    assert result.exit_code == 0
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [row["id"] for row in rows] == [ids["add2"], ids["add1"]]
    assert rows[0]["kwargs"] == {"a": "x", "b": "y"}
    assert rows[0]["result"] == "xy"
    assert rows[1]["args"] == [1, 2]
    assert rows[1]["result"] == 3
    assert rows[1]["task"] == "add" and rows[1]["queue"] == "default"
    assert rows[1]["attempt"] == 1
    assert rows[1]["finished_at"].endswith("+00:00")
    assert rows[1]["schedule"] is None
    assert result.stderr == ""


def test_jobs_export_csv_to_a_file(env: Env) -> None:
    ids = _finished(env)
    target = env.tmp / "out.csv"
    result = env.rota("jobs", "export", "--format", "csv", "-o", str(target))
    assert result.exit_code == 0
    assert result.stdout == ""
    assert result.stderr.strip() == f"exported 3 result(s) to {target}"
    with target.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [row["id"] for row in rows] == [ids["echo"], ids["add2"], ids["add1"]]
    assert list(rows[0]) == [
        "id",
        "task",
        "queue",
        "args",
        "kwargs",
        "result",
        "attempt",
        "enqueued_at",
        "started_at",
        "finished_at",
        "schedule",
    ]
    assert json.loads(rows[0]["result"]) == [["hi"], {}]
    assert json.loads(rows[1]["kwargs"]) == {"a": "x", "b": "y"}
    assert json.loads(rows[2]["args"]) == [1, 2]
    assert rows[2]["result"] == "3"
    assert rows[2]["schedule"] == ""


def test_jobs_export_to_a_file_it_cannot_write_is_one_line_before_any_read(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_read(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("read before the file was opened")

    monkeypatch.setattr(type(env.store), "iter_results", no_read)
    result = env.rota("jobs", "export", "-f", "csv", "-o", "/nonexistent/dir/x.csv")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        "Error: cannot write /nonexistent/dir/x.csv: No such file or directory\n"
    )


def test_an_interrupted_export_removes_the_incomplete_file(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    _finished(env)
    target = env.tmp / "out.json"

    def interrupted(fmt: str, jobs: Any, out: Any, total: int | None) -> int:
        out.write("[\n")
        raise KeyboardInterrupt

    monkeypatch.setattr(rota.cli._export, "write_with_progress", interrupted)
    result = env.rota("jobs", "export", "-f", "json", "-o", str(target))
    assert result.exit_code == 130
    assert result.stderr.strip() == f"interrupted: removed the incomplete {target}"
    assert not target.exists()


def test_jobs_export_shows_progress_on_a_terminal(env: Env) -> None:
    _finished(env)
    target = env.tmp / "out.jsonl"
    result = env.runner.invoke(
        main,
        ["--url", env.url, "jobs", "export", "--queue", "default", "-o", str(target)],
        env={"TTY_COMPATIBLE": "1"},
    )
    assert result.exit_code == 0
    assert "exporting" in result.stderr
    assert "3/3" in result.stderr
    assert len(target.read_text().splitlines()) == 3


# -- queues ------------------------------------------------------------------------------------


def _queue_rows(env: Env) -> dict[str, list[str]]:
    result = env.rota("queues", "list")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    if not lines:
        assert "no queues yet" in result.stderr
        return {}
    assert lines[0].split() == [
        "queue",
        "mode",
        "debug",
        "job",
        "scheduled",
        "queued",
        "running",
        "succeeded",
        "failed",
        "cancelled",
    ]
    return {line.split()[0]: line.split()[1:] for line in lines[1:]}


def test_queues_list_pause_resume(env: Env) -> None:
    empty = env.rota("queues", "list")
    assert empty.stdout == "" and "no queues yet" in empty.stderr
    env.send("add", "1", "2")
    env.send("add", "1", "3")
    env.send("add", "1", "4", "--in", "1h")
    env.send("fetch", "https://example.com/")
    work(env.store, "crawl", ok(None))
    cancelled = env.send("tools.echo", "x")
    env.rota("jobs", "cancel", cancelled)
    assert _queue_rows(env) == {
        "crawl": ["running", "-", "0", "0", "0", "1", "0", "0"],
        "default": ["running", "-", "1", "2", "0", "0", "0", "1"],
    }
    paused = env.rota("queues", "pause", "default")
    assert paused.stdout == "paused queue default\n"
    assert _queue_rows(env)["default"][0] == "paused"
    assert env.store.claim("test-worker", ["default"], 10) == []
    resumed = env.rota("queues", "resume", "default")
    assert resumed.stdout == "resumed queue default\n"
    assert _queue_rows(env)["default"][0] == "running"
    assert len(env.store.claim("test-worker", ["default"], 10)) == 2


def test_pausing_a_queue_without_jobs_or_workers_works_and_says_so(env: Env) -> None:
    said = "(no jobs or workers on queue nightly yet: it applies to the jobs the queue gets"
    ahead = env.rota("queues", "pause", "nightly")
    assert ahead.exit_code == 0 and ahead.stdout == "paused queue nightly\n"
    assert said in ahead.stderr
    assert _queue_rows(env)["nightly"][0] == "paused", "paused ahead of its first job"
    debug = env.rota("queues", "mode", "nightly", "debug")
    assert debug.exit_code == 0 and said in debug.stderr
    # a worker that serves it, or a job on it: nothing to note
    env.store.heartbeat(_worker(queues=("nightly",)))
    served = env.rota("queues", "pause", "nightly")
    assert (served.stdout, served.stderr) == ("paused queue nightly\n", "")
    env.send("add", "1", "2")
    used = env.rota("queues", "pause", "default")
    assert (used.stdout, used.stderr) == ("paused queue default\n", "")


def test_queues_list_shows_the_job_that_paused_a_debug_queue(env: Env) -> None:
    env.send("add", "1", "2")
    env.send("add", "1", "3")
    env.store.set_queue_mode("default", "debug")
    assert _queue_rows(env)["default"][:2] == ["debug", "-"]
    claimed = env.store.claim("test-worker", ["default"], 1)
    assert env.store.finish([boom(claimed[0])]) == [True]
    assert _queue_rows(env)["default"][:2] == ["paused", claimed[0].id[:12]]
    env.store.set_queue_mode("default", "running")
    assert _queue_rows(env)["default"][:2] == ["running", "-"]


def test_queues_purge_asks_first(env: Env) -> None:
    env.send("add", "1", "2")
    env.send("add", "1", "3", "--in", "1h")
    declined = env.rota("queues", "purge", "default", input="n\n")
    assert declined.exit_code == 1
    assert (
        "Delete every pending job of queue 'default': 2 job(s) (1 scheduled, 1 queued)? [y/N]"
        in declined.stderr
    )
    assert "Aborted" in declined.stderr
    assert _queue_rows(env)["default"][2:4] == ["1", "1"]
    accepted = env.rota("queues", "purge", "default", input="y\n")
    assert accepted.exit_code == 0
    assert accepted.stdout == "purged 2 pending job(s) from queue default\n"
    env.send("add", "1", "4")
    forced = env.rota("queues", "purge", "default", "--yes")
    assert forced.stdout == "purged 1 pending job(s) from queue default\n"
    assert "[y/N]" not in forced.stderr
    assert "default" not in _queue_rows(env), "an emptied queue is no longer listed"


def test_an_interrupted_cancel_reports_the_jobs_it_cancelled(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = [env.send("add", "1", str(i)) for i in range(5)]
    monkeypatch.setattr(_steering_module(), "BATCH", 2)
    real_cancel, real_get_jobs = type(env.store).cancel, type(env.store).get_jobs
    batches: list[int] = []
    sent: list[int] = []

    def cancel(self: Store, job_ids: Any, by: str | None = None) -> list[bool]:
        batches.append(len(job_ids))
        return real_cancel(self, job_ids, by=by)

    def get_jobs(self: Store, job_ids: Any) -> Any:  # Ctrl-C just after the 2nd cancel
        if len(batches) == 2 and not sent:
            sent.append(signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)
        return real_get_jobs(self, job_ids)

    monkeypatch.setattr(type(env.store), "cancel", cancel)
    monkeypatch.setattr(type(env.store), "get_jobs", get_jobs)
    stopped = env.rota("jobs", "cancel", *ids)
    assert stopped.exit_code == 130
    assert batches == [2, 2]  # one store call per batch of ids
    assert stopped.stdout.splitlines() == [f"cancelled {job_id}" for job_id in ids[:4]]
    assert stopped.stderr.strip() == (
        "interrupted: 4 of 5 done (4 cancelled); the rest were left as they were"
    )
    assert [state_of(env, job_id) for job_id in ids] == [JobState.CANCELLED] * 4 + [JobState.QUEUED]
    entries, _ = env.store.audit(action="job.cancel")
    assert sorted(e.target for e in entries) == sorted(ids[:4])


def test_purge_and_retry_of_failed_jobs_show_progress_on_a_terminal(env: Env) -> None:
    for i in range(3):
        env.send("add", "1", str(i))
    work(env.store, "default", boom)
    retried = env.runner.invoke(
        main, ["--url", env.url, "jobs", "retry", "--failed"], env={"TTY_COMPATIBLE": "1"}
    )
    assert retried.exit_code == 0
    assert "retrying" in retried.stderr and "3/3" in retried.stderr
    purged = env.runner.invoke(
        main, ["--url", env.url, "queues", "purge", "default", "-y"], env={"TTY_COMPATIBLE": "1"}
    )
    assert purged.exit_code == 0
    assert "purging" in purged.stderr and "3/3" in purged.stderr
    assert purged.stdout == "purged 3 pending job(s) from queue default\n"


def _interrupt_after_a_part(verb: str, done: int) -> Callable[..., int]:
    """A store verb that applies a part of ``done`` jobs, then is interrupted."""

    def interrupted(*args: Any, **kwargs: Any) -> int:
        report_progress(done)
        raise KeyboardInterrupt

    interrupted.__name__ = verb
    return interrupted


def test_an_interrupted_purge_says_what_it_did_and_audits_it(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(3):
        env.send("add", "1", str(i))
    monkeypatch.setattr(type(env.store), "purge_queue", _interrupt_after_a_part("purge_queue", 2))
    stopped = env.rota("queues", "purge", "default", "--yes")
    assert stopped.exit_code == 130
    assert stopped.stdout == ""
    assert (
        "interrupted: purged 2 of 3 pending job(s) from queue default (audited); the rest are left"
        in stopped.stderr
    )
    entries, _ = env.store.audit(action="queue.purge")
    assert [(e.target, e.details) for e in entries] == [
        ("default", {"count": 2, "interrupted": True})
    ]


def test_a_first_ctrl_c_stops_a_purge_at_the_end_of_a_part(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(3):
        env.send("add", "1", str(i))
    parts: list[int] = []

    def purge_in_parts(self: Store, queue: str) -> int:
        os.kill(os.getpid(), signal.SIGINT)  # while the first part runs
        for part in (2, 1):
            parts.append(part)
            report_progress(part)
        return 3

    monkeypatch.setattr(type(env.store), "purge_queue", purge_in_parts)
    stopped = env.rota("queues", "purge", "default", "--yes")
    assert stopped.exit_code == 130
    assert parts == [2]  # stopped after the first part, none begun after it
    assert "interrupted: purged 2 of 3 pending job(s) from queue default" in stopped.stderr
    entries, _ = env.store.audit(action="queue.purge")
    assert [e.details for e in entries] == [{"count": 2, "interrupted": True}]


def test_an_interrupted_retry_of_failed_jobs_says_what_it_did_and_audits_it(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(3):
        env.send("add", "1", str(i))
    work(env.store, "default", boom)
    monkeypatch.setattr(type(env.store), "retry_failed", _interrupt_after_a_part("retry_failed", 1))
    stopped = env.rota("jobs", "retry", "--failed")
    assert stopped.exit_code == 130
    assert (
        "interrupted: retried 1 of 3 failed job(s) (audited); the rest stay failed"
        in stopped.stderr
    )
    entries, _ = env.store.audit(action="job.retry_failed")
    assert [(e.target, e.details) for e in entries] == [("*", {"count": 1, "interrupted": True})]


# -- limits ------------------------------------------------------------------------------------


def _limit_rows(env: Env) -> dict[str, str]:
    result = env.rota("limits", "list")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["key", "running/limit", "rate", "tokens", "failures", "breaker"]
    return {line.split()[0]: line.split(None, 1)[1] for line in lines[1:]}


def test_limits_set_list_clear(env: Env) -> None:
    empty = env.rota("limits", "list").stderr
    assert "no limit keys yet: a key appears once a job of it is claimed" in empty
    env.send("fetch", "https://example.com/1")
    env.send("fetch", "https://example.com/2")
    env.store.claim("test-worker", ["crawl"], 1)
    assert _limit_rows(env)["spiders"].split()[:1] == ["1/2"]
    result = env.rota("limits", "set", "spiders", "5")
    assert result.stdout == "limit of spiders set to 5\n"
    assert _limit_rows(env)["spiders"].split()[:2] == ["1/5", "(set)"]
    assert len(env.store.claim("test-worker", ["crawl"], 10)) == 1
    cleared = env.rota("limits", "clear", "spiders")
    assert cleared.stdout == "limit of spiders back to the declared value\n"
    assert _limit_rows(env)["spiders"].split()[:1] == ["2/2"]
    zero = env.rota("limits", "set", "other", "0")
    assert zero.exit_code == 0
    assert _limit_rows(env)["other"].split()[:2] == ["0/0", "(set)"]


def test_limits_clear_of_an_unknown_key_says_so_and_changes_nothing(env: Env) -> None:
    for words in (["limits", "clear", "nope"], ["limits", "rate", "nope", "clear"]):
        result = env.rota(*words)
        assert result.exit_code == 1, result.output
        assert result.stdout == ""
        assert "Error: limit key 'nope' not found" in result.stderr
    assert env.store.limits() == []
    assert "no operator actions recorded" in env.rota("audit").output


def test_limits_rate_set_list_clear(env: Env) -> None:
    for _ in range(6):
        env.send("polite")
    assert len(env.store.claim("test-worker", ["polite"], 10)) == 2  # the burst
    result = env.rota("limits", "rate", "site", "1/h")
    assert result.stdout == "rate of site set to 1/h\n"
    assert _limit_rows(env)["site"].split()[1:4] == ["0.000277778/s", "burst", "2"]
    assert _limit_rows(env)["site"].split()[4] == "(set)"
    # what the old 100/s earned before the change (a burst at most), then nothing
    assert len(env.store.claim("test-worker", ["polite"], 10)) <= 2
    assert env.store.claim("test-worker", ["polite"], 10) == []
    bad = env.rota("limits", "rate", "site", "fast")
    assert bad.exit_code != 0 and "rate 'fast' is not valid" in bad.stderr
    assert _limit_rows(env)["site"].split()[1] == "0.000277778/s", "a bad rate changes nothing"
    plain = env.rota("limits", "rate", "site", " 0.5")  # a plain number: jobs a second
    assert plain.stdout == "rate of site set to 0.5\n"
    assert _limit_rows(env)["site"].split()[1] == "0.5/s"
    cleared = env.rota("limits", "rate", "site", "clear")
    assert cleared.stdout == "rate of site back to the jobs' own\n"
    assert _limit_rows(env)["site"].split()[1:3] == ["100/s", "burst"]
    assert "(set)" not in _limit_rows(env)["site"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--", "spiders", "-1"], "-1 is not in the range x>=0"),
        (["spiders", "-1"], "Invalid value for 'N': -1 is not in the range x>=0"),
        (["spiders", "-5", "--url", "sqlite:///x.db"], "-5 is not in the range x>=0"),
        (["spiders", "--nope"], "Invalid value for 'N': '--nope' is not a valid integer"),
        (["spiders", "many"], "'many' is not a valid integer"),
        (["spiders"], "Missing argument 'N'"),
    ],
)
def test_limits_set_bad_values(env: Env, args: list[str], message: str) -> None:
    result = env.rota("limits", "set", *args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert env.store.limits() == []


def test_limits_set_keeps_its_help_and_options(env: Env) -> None:
    helped = env.rota("limits", "set", "--help")
    assert helped.exit_code == 0 and "Let at most N jobs with KEY run" in helped.stdout
    done = env.rota("limits", "set", "k", "3", "--url", env.url, url=False)
    assert done.exit_code == 0 and done.stdout == "limit of k set to 3\n"


def test_limits_breaker_open_and_reset(env: Env) -> None:
    env.send("fragile")
    work(env.store, "fragile", boom)
    row = _limit_rows(env)["flaky"]
    assert row.split()[:3] == ["0/-", "-", "-"]
    assert row.split()[3] == "1"
    assert "open until" in row and "(in 9m" in row
    result = env.rota("limits", "reset", "flaky")
    assert result.stdout == "closed the breaker of flaky\n"
    assert "open until" not in _limit_rows(env)["flaky"]
    again = env.rota("limits", "reset", "flaky")
    assert again.exit_code == 0
    assert again.stderr.strip() == "the breaker of flaky was not open; nothing changed"


# -- status --------------------------------------------------------------------------------------


def _worker(running: int = 1, **changes: Any) -> WorkerInfo:
    base: dict[str, Any] = {
        "id": "host-a-123-abc",
        "host": "host-a",
        "pid": 123,
        "queues": ("default", "crawl"),
        "concurrency": 4,
        "mode": "threads",
        "running": running,
        "started_at": time.time(),
        "cpu_percent": 12.4,
        "mem_percent": 56.6,
        "load": 0.31,
    }
    return WorkerInfo(**(base | changes))


def test_status_shows_queues_workers_and_throughput(env: Env) -> None:
    env.send("add", "1", "2")
    env.send("add", "2", "2")
    env.send("fetch", "https://example.com/")
    work(env.store, "default", ok(3))
    work(env.store, "crawl", boom)
    env.store.heartbeat(_worker())
    result = env.rota("status")
    assert result.exit_code == 0
    sections = result.stdout.split("\n\n")
    assert sections[0] == f"store: {env.url}"
    queues = sections[1].splitlines()
    assert queues[0] == "queues"
    assert queues[2].split() == ["crawl", "running", "-", "0", "0", "0", "0", "1", "0"]
    assert queues[3].split() == ["default", "running", "-", "0", "0", "0", "2", "0", "0"]
    workers = sections[2].splitlines()
    assert workers[0] == "workers"
    assert workers[1].split() == [
        "host",
        "pid",
        "queues",
        "mode",
        "concurrency",
        "running",
        "stuck",
        "host",
        "cpu",
        "host",
        "mem",
        "load",
        "errors",
        "heartbeat",
        "state",
    ]
    assert workers[2].split() == [
        "host-a",
        "123",
        "default,crawl",
        "threads",
        "4",
        "1",
        "0",
        "12%",
        "57%",
        "31%",
        "0",
        "0s",
        "ago",
        "online",
    ]
    throughput = sections[3].splitlines()
    assert throughput[0] == "throughput (finished attempts)"
    assert [line.rsplit(None, 2) for line in throughput[2:]] == [
        ["last 5 min", "2", "1"],
        ["last hour", "2", "1"],
        ["last day", "2", "1"],
        ["all time", "2", "1"],
    ]


def test_status_counts_the_schedules_and_names_the_next_to_fire(env: Env) -> None:
    for name, *when in (
        ("minutely", "--every", "60"),
        ("far", "--at", "2099-01-01T00:00"),
        ("missed", "--at", "2020-01-01T00:00"),
        ("off", "--every", "60", "--paused"),
    ):
        assert env.rota("schedules", "add", name, *when, "--", "true").exit_code == 0
    section = env.rota("status").stdout.split("\n\n")[-1].splitlines()
    assert section[:2] == ["schedules", "3 active, 1 paused, 1 overdue"]
    assert section[2].split() == ["next", "to", "fire", "when"]
    assert [line.split()[0] for line in section[3:]] == ["minutely", "far"]
    assert "2099-01-01 00:00:00" in section[4]


def test_status_of_an_empty_store(env: Env) -> None:
    result = env.rota("status")
    assert result.exit_code == 0
    assert "no queues yet" in result.stdout
    assert "no workers" in result.stdout
    assert result.stdout.splitlines()[-1].split() == ["all", "time", "0", "0"]


def test_worker_state_marks_silent_workers_lost() -> None:
    now = time.time()
    fresh = _worker(heartbeat_at=now - 5)
    silent = _worker(heartbeat_at=now - LOST_AFTER - 1)
    assert LOST_AFTER == 30.0
    assert worker_state(fresh, now).plain == "online"
    assert worker_state(silent, now).plain == "lost"
    assert worker_state(_worker(heartbeat_at=now, stopping=True), now).plain == "stopping"
    assert worker_state(_worker(heartbeat_at=now, holding_back=True), now).plain == "holding back"


# -- secrets, errors, registry ---------------------------------------------------------------------


def test_store_passwords_are_never_printed(env: Env) -> None:
    secret_url = "memcached://admin:hunter2@db.example:11211/0"
    result = env.runner.invoke(main, ["--url", secret_url, "status"])
    assert result.exit_code == 2
    assert "store: memcached://admin:***@db.example:11211/0" in result.stdout
    assert "Error: unsupported store URL scheme 'memcached'" in result.stderr
    shown = env.rota("jobs", "show", "redis://:hunter2@cache.example:6379/0")
    assert shown.stderr == "Error: job 'redis://:***@cache.example:6379/0' not found\n"
    for output in (result.output, shown.output):
        assert "hunter2" not in output


def test_redact_text() -> None:
    text = "a redis://u:p4ss@h:1/0 and postgresql://me:s3cret@db/x and sqlite:///tmp/a.db"
    assert redact_text(text) == (
        "a redis://u:***@h:1/0 and postgresql://me:***@db/x and sqlite:///tmp/a.db"
    )


def test_formats() -> None:
    assert [format_duration(s) for s in (-3, 0, 59.9, 61, 3725, 90061)] == [
        "0s",
        "0s",
        "59s",
        "1m 01s",
        "1h 02m",
        "1d 01h",
    ]
    assert summary("first line\nsecond") == "first line …"
    assert summary("  one line \n") == "one line"
    assert summary("x" * 80, width=10) == "x" * 9 + "…"
    assert summary(None) == ""


def test_help_and_version(env: Env) -> None:
    result = env.rota("--help", url=False)
    assert result.exit_code == 0
    listed = result.stdout.split("Commands:")[1].split()
    for name in ("jobs", "limits", "queues", "send", "status", "worker"):
        assert name in listed
    version = env.rota("--version", url=False)
    assert version.stdout.strip() == f"rota, version {rota.__version__}"


def test_a_command_missing_its_extra_does_not_break_the_others(
    env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "needs_extra.py").write_text("import rota_extra_not_installed\n")
    monkeypatch.setattr(rota.cli, "__path__", [*rota.cli.__path__, str(plugins)])
    monkeypatch.setitem(rota.cli.COMMANDS, "fancy", rota.cli.Entry("needs_extra:fancy", "web"))
    monkeypatch.setitem(rota.cli.COMMANDS, "later", rota.cli.Entry("not_written_yet:later"))
    listing = env.rota("--help", url=False)
    assert listing.exit_code == 0
    commands = listing.stdout.split("Commands:")[1].splitlines()
    assert "fancy (unavailable: pip install 'rota[web]')" in [" ".join(c.split()) for c in commands]
    assert "later" not in listing.stdout
    used = env.rota("fancy", "--anything", url=False)
    assert used.exit_code == 1
    assert used.stderr == (
        "Error: 'rota fancy' needs 'rota_extra_not_installed', which is not installed: "
        "pip install 'rota[web]'\n"
    )
    missing = env.rota("later", url=False)
    assert missing.exit_code == 2
    assert "No such command 'later'" in missing.stderr
    assert env.rota("queues", "list").exit_code == 0


def test_worker_bad_input_fails_before_it_starts(env: Env) -> None:
    no_queue = env.rota("worker", env.app, "--queues", " , ")
    assert no_queue.exit_code == 2
    assert no_queue.stderr == "Error: --queues names no queue\n"
    missing = env.rota("worker", str(env.tmp / "gone.py"))
    assert missing.exit_code == 2
    assert missing.stderr == f"Error: app file '{env.tmp / 'gone.py'}' not found\n"
    for option, value, message in [
        ("--concurrency", "0", "0 is not in the range x>=1"),
        ("--grace", "forever", "grace 'forever' is not a duration"),
        ("--grace", "-1", "grace must not be negative, got '-1'"),
        ("--host-grace", "-5", "host grace must not be negative, got '-5'"),
        ("--processes", "100000", "100000 is too many"),
        ("--max-cpu", "150", "150.0 is not in the range 0<x<=100"),
        ("--heartbeat", "11", "11.0 is not in the range 0.1<=x<=10.0"),
        ("--mode", "fibers", "'fibers' is not one of 'threads', 'processes', 'async'"),
        ("--host", "", "Invalid value for '--host': host must be a non-empty string"),
    ]:
        result = env.rota("worker", env.app, option, value)
        assert result.exit_code == 2, option
        assert message in result.stderr, result.stderr


def test_all_queues_of_the_app(env: Env) -> None:
    app = load_app(env.app)
    assert resolve_queues(app, "all") == ["crawl", "default", "fragile", "polite"]
    assert resolve_queues(app, "b, a,,c") == ["b", "a", "c"]


def test_send_and_schedules_add_with_a_host(env: Env) -> None:
    job_id = env.send("add", "--host", "web-3", "1", "2")
    job = env.store.get_job(job_id)
    assert job is not None and job.host == "web-3"
    shown = env.rota("jobs", "show", job_id)
    assert "web-3" in shown.stdout

    added = env.rota(
        "schedules", "add", "backup", "--every", "3600", "--host", "db-1", "--", "true"
    )
    assert added.exit_code == 0, added.output
    [stored] = env.store.schedules()
    assert stored.job_options["host"] == "db-1"

    refused = env.rota("send", env.app, "add", "--host", "", "1", "2")
    assert refused.exit_code == 2
    assert "host" in refused.output


def test_schedules_add_stores_retries_backoff_timeout_overlap_and_priority(env: Env) -> None:
    added = env.rota(
        "schedules", "add", "nightly", "--cron", "0 3 * * *", "--retries", "4",
        "--backoff", "30s,1h", "--timeout", "15m", "--overlap", "skip", "-p", "7",
        "--", "python", "crawl.py",
    )  # fmt: skip
    assert added.exit_code == 0, added.output
    [stored] = env.store.schedules()
    assert (stored.overlap, stored.job_options["priority"]) == ("skip", 7)
    assert stored.job_options["max_attempts"] == 5
    assert json.loads(stored.job_options["retry"]) == {"backoff": [30.0, 3600.0]}
    assert json.loads(stored.payload) == {
        "args": [["python", "crawl.py"]],
        "kwargs": {"timeout": 900.0},
    }
    shown = env.rota("schedules", "show", "nightly").stdout
    assert '"timeout": 900.0' in shown and "overlap          skip" in shown
    assert "command options  timeout 900 s\n" in shown
    assert "retries          up to 4, backoff 30 s doubling to 3600 s" in shown
    options, _ = json.JSONDecoder().raw_decode(shown.split("job options\n", 1)[1])
    assert options["retry"] == {"backoff": [30.0, 3600.0], "retry_on": None, "no_retry_on": []}


def test_command_lines_take_a_directory_an_environment_and_ok_codes(env: Env) -> None:
    added = env.rota(
        "schedules", "add", "report", "--every", "1h", "--cwd", "/srv/app", "--env", "A=1",
        "--env", "TOKEN=x=y", "--ok-codes", "0,2", "--", "./report.sh",
    )  # fmt: skip
    assert added.exit_code == 0, added.output
    [stored] = env.store.schedules()
    assert json.loads(stored.payload)["kwargs"] == {
        "cwd": "/srv/app",
        "env": {"A": "1", "TOKEN": "x=y"},
        "ok_codes": [0, 2],
    }
    shown = env.rota("schedules", "show", "report").stdout
    assert "command options  ok codes 0 2, cwd /srv/app, env A TOKEN\n" in shown
    arguments = shown.split("\narguments\n")[1].split("\njob options\n")[0]
    assert json.loads(arguments)["kwargs"] == {
        "cwd": "/srv/app",
        "env": {"A": "***", "TOKEN": "***"},  # the names only: the values may be secrets
        "ok_codes": [0, 2],
    }
    assert "x=y" not in shown
    sent = env.rota("send", "--cmd", "--ok-codes", "3", "--env", "B=s3cret", "--", "true")
    assert sent.exit_code == 0, sent.output
    job = env.store.get_job(sent.stdout.strip())
    assert job is not None and job.kwargs == {"env": {"B": "s3cret"}, "ok_codes": [3]}
    job_shown = env.rota("jobs", "show", job.id).stdout
    kwargs = job_shown.split("\nkwargs\n")[1].split("\n\n")[0]
    assert json.loads(kwargs) == {"env": {"B": "***"}, "ok_codes": [3]}
    assert "s3cret" not in job_shown
    for words, message in (
        (["--env", "A", "--", "true"], "'A' is not NAME=VALUE"),
        (["--ok-codes", "zero", "--", "true"], "'zero' is not a list of exit codes"),
        (["--ok-codes", "0,300", "--", "true"], "300 is not an exit code: they are 0 to 255"),
        (["--cwd", "", "--", "true"], "cwd must be a directory path"),
        (["--app", env.app, "--task", "add", "--cwd", "/", "--", "1", "2"], "go with a command"),
    ):
        refused = env.rota("schedules", "add", "bad", "--every", "60", *words)
        assert refused.exit_code == 2 and message in refused.output, (words, refused.output)
    task_send = env.rota("send", env.app, "add", "--cwd", "/", "1", "2")
    assert task_send.exit_code == 2 and "go with --cmd" in task_send.output
    assert env.store.get_schedule("bad") is None


def test_schedules_show_lists_the_next_fires_and_the_latest_jobs(env: Env) -> None:
    added = env.rota("schedules", "add", "tick", "--every", "60", "--", "true")
    assert added.exit_code == 0, added.output
    quiet = env.rota("schedules", "show", "tick")
    assert quiet.exit_code == 0, quiet.output
    assert len(re.findall(r"^\d{4}-\d\d-\d\d \d\d:\d\d:00 UTC \(in ", quiet.stdout, re.M)) == 5
    assert quiet.stdout.rstrip().endswith("latest jobs\nno jobs yet")

    ran = [env.rota("schedules", "run-now", "tick").stdout.strip() for _ in range(2)]
    [first, _] = env.store.claim("w", ["default"], 5)
    assert env.store.finish([Outcome(first.id, first.token, ok=True, result=b"0")]) == [True]
    shown = env.rota("schedules", "show", "tick").stdout
    assert "1 succeeded, 0 failed of the last 2; median run" in shown
    rows = {line[:32]: line for line in shown.splitlines() if line[:32] in ran}
    assert first.id == ran[0] and rows[ran[0]].split()[1] == "succeeded"
    assert re.search(r" \d+\.\d{3} s +1/1$", rows[ran[0]]), rows[ran[0]]
    assert rows[ran[1]].split()[1] == "running"
    assert re.search(r" \d+\.\d{3} s so far +1/1$", rows[ran[1]]), rows[ran[1]]

    assert env.rota("schedules", "pause", "tick").exit_code == 0
    paused = env.rota("schedules", "show", "tick").stdout
    assert "next fires\npaused; once resumed it would fire at:\n" in paused


def test_a_one_off_schedule_that_has_fired_is_done(env: Env) -> None:
    added = env.rota("schedules", "add", "once", "--at", "2020-01-01T00:00", "--", "true")
    assert added.exit_code == 0, added.output
    Scheduler(rota.App(env.url)).tick()  # (an App of the store alone: rota.cmd needs none)
    stored = env.store.get_schedule("once")
    assert stored is not None and stored.next_fire is None and stored.last_job_id is not None
    listed = env.rota("schedules", "list").stdout
    [row] = [line for line in listed.splitlines() if line.startswith("once ")]
    assert re.search(r" never +2020-01-01 .* queued +done +0$", row), row
    shown = env.rota("schedules", "show", "once").stdout
    assert re.search(r"^enabled +done$", shown, re.M) and re.search(
        r"^next fire +never$", shown, re.M
    )
    assert "next fires\nnone: the trigger fires no more" in shown


def test_schedules_show_of_a_paused_schedule_says_when_it_would_fire(env: Env) -> None:
    added = env.rota("schedules", "add", "q", "--cron", "*/15 * * * *", "--paused", "--", "true")
    assert added.exit_code == 0, added.output
    shown = env.rota("schedules", "show", "q").stdout
    fires = re.findall(r"^\d{4}-\d\d-\d\d \d\d:(\d\d):00 \S+ \(in ", shown, re.M)
    assert len(fires) == 5 and {int(m) % 15 for m in fires} == {0}, shown
    assert "next fires\npaused; once resumed it would fire at:\n" in shown
    assert re.search(r"^next fire +paused \(would fire at \d{4}-.* \(in ", shown, re.M), shown
    listed = env.rota("schedules", "list").stdout
    assert re.search(r"^q .* paused .* paused +0$", listed, re.M), listed
    # paused long ago: the fires it would make from now on, not its stored past one
    stored = env.store.get_schedule("q")
    assert stored is not None and stored.next_fire is not None
    now = env.store.now()
    old = dataclasses.replace(stored, next_fire=now - 86400)
    later = would_fire(old, now)
    assert len(later) == 5 and now <= later[0] <= now + 900


def test_schedules_add_keeps_a_pause_unless_told(env: Env) -> None:
    def add(*flags: str) -> bool:
        added = env.rota("schedules", "add", "backup", "--every", "60", *flags, "--", "true")
        assert added.exit_code == 0, added.output
        [stored] = env.store.schedules()
        return stored.enabled

    assert not add("--paused")
    assert not add(), "replacing it keeps the pause"
    assert add("--enabled")
    assert add()


def test_schedules_add_at_a_time_that_has_passed_says_so(env: Env) -> None:
    added = env.rota("schedules", "add", "once", "--at", "2020-01-01T00:00", "--", "true")
    assert added.exit_code == 0, added.output
    assert "2020-01-01T00:00 has passed: a scheduler runs it once" in added.stderr
    later = env.rota("schedules", "add", "later", "--at", "2099-01-01T00:00", "--", "true")
    assert later.exit_code == 0 and "has passed" not in later.stderr

    assert env.rota("schedules", "pause", "once").exit_code == 0
    shown = env.rota("schedules", "show", "once")
    assert re.search(r"next fire\s+paused", shown.stdout), shown.stdout
    listed = env.rota("schedules", "list")
    assert "2099-01-01" in listed.stdout and "2020-01-01 00:00:00" not in listed.stdout


def test_send_cmd_with_a_timeout_of_the_command(env: Env) -> None:
    job_id = env.send("--cmd", "--cmd-timeout", "90s", "--", "sleep", "300")
    job = env.store.get_job(job_id)
    assert job is not None and (job.args, job.kwargs) == ([["sleep", "300"]], {"timeout": 90.0})
    assert re.search(r"^command +sleep 300$", env.rota("jobs", "show", job_id).stdout, re.M)
    for words, message in (
        (
            ["add", "--cmd-timeout", "5", "1", "2"],
            "--cmd-timeout, --cwd, --env and --ok-codes go with --cmd",
        ),
        (["--cmd", "--json", "{}"], "--cmd takes the command line after --, not --json"),
        (["--cmd", "--cmd-timeout", "0", "--", "true"], "timeout must be above 0"),
    ):
        refused = env.rota("send", env.app, *words)
        assert refused.exit_code == 2 and message in refused.output, refused.output
    typo = env.rota("send", env.app, "ad", "1", "2")
    assert typo.exit_code == 2 and "did you mean 'add'?" in typo.output, typo.output


def test_send_cmd_without_an_app_sends_to_the_store_of_the_url(env: Env) -> None:
    sent = env.rota("send", "-q", "nightly", "--cmd", "--", "echo", "-n", "hi")
    assert sent.exit_code == 0, sent.output
    job = env.store.get_job(sent.stdout.strip())
    assert job is not None and job.task == "rota.cmd" and job.queue == "nightly"
    assert job.args == [["echo", "-n", "hi"]]
    assert "rota.cmd: echo -n hi" in env.rota("jobs", "list").stdout  # which command it is
    for words, message in (
        (["--cmd"], "missing the command line: rota send [APP] --cmd -- CMD ARGS..."),
        (["--cmd", "--"], "missing the command line"),
        ([], "missing APP and TASK"),
        (["--", "add", "1"], "module 'add' not found"),  # no --cmd: the first word is APP
        (["--cmd", "echo", "hi"], "with --cmd, put -- before the command line"),
        ([env.app], "missing TASK"),
    ):
        refused = env.rota("send", *words)
        assert refused.exit_code == 2 and message in refused.output, (words, refused.output)
    assert len(env.store.list_jobs(JobQuery()).jobs) == 1, "nothing else was sent"


def test_schedules_add_a_task_of_an_app_with_its_arguments(env: Env) -> None:
    added = env.rota(
        "schedules", "add", "sums", "--cron", "0 3 * * *", "--app", env.app, "--task", "add",
        "--retries", "4", "-q", "nightly", "--overlap", "skip", "--", "1", "[2]",
    )  # fmt: skip
    assert added.exit_code == 0, added.output
    assert added.stdout.strip() == "added schedule sums: cron 0 3 * * * (UTC): task add(1, [2])"
    stored = env.store.get_schedule("sums")
    assert stored is not None and (stored.task, stored.overlap) == ("add", "skip")
    assert json.loads(stored.payload) == {"args": [1, [2]], "kwargs": {}}
    assert (stored.job_options["queue"], stored.job_options["max_attempts"]) == ("nightly", 5)
    by_json = env.rota(
        "schedules", "add", "echo", "--every", "60", "--app", env.app, "--task", "tools.echo",
        "--json", '{"args": ["a"], "kwargs": {"x": 2}}',
    )  # fmt: skip
    assert by_json.stdout.strip() == 'added schedule echo: every minute: task tools.echo("a", x=2)'
    again = env.rota(
        "schedules", "add", "echo", "--every", "120", "--app", env.app, "--task", "tools.echo",
    )  # fmt: skip
    assert again.stdout.strip() == "replaced schedule echo: every 2 minutes: task tools.echo()"

    for words, message in (
        (["--task", "add", "--", "1", "2"], "--task needs --app"),
        (["--app", env.app, "--", "true"], "--app and --json go with --task"),
        (["--json", "[1]", "--", "true"], "--app and --json go with --task"),
        (["--app", env.app, "--task", "add", "--timeout", "5"], "--timeout stops a command"),
        (["--app", env.app, "--task", "add", "--json", "[1]", "--", "2"], "as ARGS or with --json"),
        ([], "missing the command line after --"),
    ):
        refused = env.rota("schedules", "add", "bad", "--every", "60", *words)
        assert refused.exit_code == 2 and message in refused.output, (words, refused.output)
    unknown = env.rota("schedules", "add", "bad", "--every", "9", "--app", env.app, "--task", "x")
    assert unknown.exit_code == 2 and "unknown task 'x'" in unknown.output
    assert env.store.get_schedule("bad") is None


def test_send_with_retries_and_backoff(env: Env) -> None:
    job_id = env.send("add", "--retries", "3", "--backoff", "2s,1m", "1", "2")
    job = env.store.get_job(job_id)
    assert job is not None and job.max_attempts == 4
    claimed = env.store.claim("w", [job.queue], 1)
    assert json.loads(claimed[0].retry or "{}") == {"backoff": [2.0, 60.0]}

    command_id = env.send("--cmd", "--retries", "1", "--", "true")
    command_job = env.store.get_job(command_id)
    assert command_job is not None and command_job.max_attempts == 2

    refused = env.rota("send", env.app, "add", "--backoff", "1m,2s", "1", "2")
    assert refused.exit_code == 2
    assert "the base (1m) is longer than the max (2s)" in refused.output


def test_schedules_list_and_show_a_stored_time_no_date_can_show(env: Env) -> None:
    added = env.rota("schedules", "add", "far", "--at", "2099-01-01T00:00", "--", "true")
    assert added.exit_code == 0, added.output
    import sqlite3

    with sqlite3.connect(env.url.removeprefix("sqlite:///")) as conn:  # an older rota wrote it
        conn.execute("UPDATE schedules SET next_fire = -9e10, last_fire = 1e20")
    for words in (["schedules", "list"], ["schedules", "show", "far"]):
        shown = env.rota(*words)
        assert shown.exit_code == 0, shown.output
        assert "epoch -90000000000.0" in shown.stdout and "epoch 1e+20" in shown.stdout


@pytest.mark.parametrize(
    ("when", "message"),
    [
        ("0001-01-01T00:00", "before 0001-01-02 00:00 UTC, the earliest time rota keeps"),
        ("9999-12-31T23:59:59", "past 9999-12-31 00:00 UTC, the latest time rota keeps"),
    ],
)
def test_schedules_add_refuses_a_time_no_date_can_show(env: Env, when: str, message: str) -> None:
    added = env.rota("schedules", "add", "x23", "--at", when, "--", "echo", "hi")
    assert added.exit_code != 0
    assert message in added.stderr and "Traceback" not in added.output
    assert env.store.schedules() == []
    assert env.rota("schedules", "list").exit_code == 0


@pytest.mark.parametrize(
    ("command", "verb", "done"),
    [
        ("retry", "retry", "retried"),
        ("cancel", "cancel", "cancelled"),
        ("delete", "delete", "deleted"),
    ],
)
def test_steering_many_ids_looks_them_up_and_changes_them_in_batches(
    env: Env, monkeypatch: pytest.MonkeyPatch, command: str, verb: str, done: str
) -> None:
    ids = [env.send("add", "1", str(i)) for i in range(5)]
    if command == "retry":
        work(env.store, "default", boom)
    monkeypatch.setattr(_steering_module(), "BATCH", 2)
    calls: dict[str, list[int]] = {"get_jobs": [], "resolve_job_id": [], verb: []}
    store_type = type(env.store)
    for name in calls:
        real = getattr(store_type, name)

        def counted(
            self: Store, first: Any, *args: Any, _real: Any = real, _name: str = name, **kwargs: Any
        ) -> Any:
            calls[_name].append(len(first) if isinstance(first, list) else 1)
            return _real(self, first, *args, **kwargs)

        monkeypatch.setattr(store_type, name, counted)
    result = env.rota("jobs", command, *ids, ids[0])  # an id twice is steered once
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [f"{done} {job_id}" for job_id in ids]
    assert calls[verb] == [2, 2, 1]  # one store call per batch of ids
    assert calls["resolve_job_id"] == []  # whole ids: no search one by one
    assert calls["get_jobs"][:3] == [2, 2, 1]  # looked up in batches too
    assert sorted(e.target for e in env.store.audit(action=f"job.{verb}")[0]) == sorted(ids)


def test_steering_many_ids_reports_each_refusal_as_alone(env: Env) -> None:
    failed = [env.send("add", "1", str(i)) for i in range(2)]
    work(env.store, "default", boom)
    queued = env.send("add", "2", "2")
    result = env.rota("jobs", "retry", failed[0], queued, "nosuchjob", failed[1][:10])
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [f"retried {failed[0]}", f"retried {failed[1]}"]
    assert (
        f"could not retry {queued}: job {queued} is queued; only failed or cancelled jobs can "
        "be retried" in result.stderr
    )
    assert "could not retry nosuchjob: not found" in result.stderr
    assert "Error: 2 of 4 job(s) could not be retried" in result.stderr
    [running] = env.store.claim("test-worker", ["default"], 1)
    deleted = env.rota("jobs", "delete", *failed, queued)
    assert deleted.exit_code == 1
    assert deleted.stderr.splitlines()[0] == (
        f"could not delete {running.id}: job {running.id} is running; a running job cannot "
        "be deleted"
    )
    rest = [job_id for job_id in (*failed, queued) if job_id != running.id]
    assert deleted.stdout.splitlines() == [f"deleted {job_id}" for job_id in rest]
    assert env.store.get_jobs(rest) == [None, None]
