"""Bad input on the command line: exit code 2, a one-line message naming the
problem, no traceback, and nothing written to the store (click's CliRunner
against a real SQLite store)."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from rota.cli import main
from rota.stores import Store, open_store

APP_SOURCE = """
    import rota

    app = rota.App()

    @app.task(name="echo")
    def echo(*args, **kwargs):
        return [args, kwargs]
"""


@dataclass
class Cli:
    """A store and an app file, and a way to run ``rota --url STORE ...``."""

    url: str
    app: str
    store: Store
    runner: CliRunner

    def run(self, *args: str) -> Result:
        return self.runner.invoke(main, ["--url", self.url, *args])

    def snapshot(self) -> tuple[Any, ...]:
        """What a refused command could have written."""
        return (
            [(q.name, q.paused, dict(q.counts)) for q in self.store.queues()],
            [s.name for s in self.store.schedules()],
            [(i.key, i.override) for i in self.store.limits()],
        )


@pytest.fixture
def cli(tmp_path: Path) -> Iterator[Cli]:
    app_file = tmp_path / "validapp.py"
    app_file.write_text(textwrap.dedent(APP_SOURCE))
    url = f"sqlite:///{tmp_path / 'rota.db'}"
    store = open_store(url)
    saved_path, saved_modules = list(sys.path), set(sys.modules)
    yield Cli(url, f"{app_file}:app", store, CliRunner(env={"ROTA_URL": None, "COLUMNS": "500"}))
    sys.path[:] = saved_path
    for name in set(sys.modules) - saved_modules:
        del sys.modules[name]
    store.close()


def refused(result: Result, *fragments: str) -> None:
    """Exit code 2, every fragment in the message, and no traceback."""
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.output, result.output


DEEP = "[" * 30_000 + "]" * 30_000


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["NaN"], ["ARGS", "argument 'NaN': NaN is not JSON"]),
        (["--", "1", "-Infinity"], ["ARGS", "-Infinity is not JSON"]),
        (["Infinity"], ["Infinity is not JSON"]),
        (["[1, NaN]"], ["NaN is not JSON"]),
        ([DEEP], ["ARGS", "nested too deeply to be read"]),
        (["[[1]]x"], []),  # not JSON at all: sent as text (checked below)
        (["[" * 70 + "]" * 70], ["ARGS", "args[0]", "deeper than 64 levels"]),
        (["18446744073709551616"], ["args[0] is an integer beyond 64 signed bits"]),
        (["--json", "[NaN]"], ["'--json'", "NaN is not JSON"]),
        (["--json", DEEP], ["'--json'", "nested too deeply to be read"]),
        (["--json", "{" * 3], ["'--json'", "not valid JSON"]),
        (["--json", '{"kwargs": {"a": [Infinity]}}'], ["Infinity is not JSON"]),
        (
            ["--json", '{"kwargs": {"a": ' + "[" * 65 + "]" * 65 + "}}"],
            ["kwargs['a']", "deeper than 64"],
        ),
        (["--json", "[9223372036854775808]"], ["args[0] is an integer beyond 64"]),
        (["--json", '"x"'], ["expected a JSON list of arguments"]),
        (["--queue", "", "1"], ["'--queue'", "queue must be a non-empty string"]),
        (["--queue", "a\tb", "1"], ["control characters"]),
        (["--priority", str(2**40), "1"], ["'--priority'", "not in the range"]),
        (["--in", "nan", "1"], ["'--in'", "not a duration"]),
        (["--in", str(10**20), "1"], ["'--in'", "at most 100 years"]),
    ],
)
def test_send_refuses_bad_arguments_without_a_traceback(
    cli: Cli, args: list[str], fragments: list[str]
) -> None:
    before = cli.snapshot()
    result = cli.run("send", cli.app, "echo", *args)
    if not fragments:  # text that is not JSON at all is sent as a string
        assert result.exit_code == 0, result.output
        job = cli.store.get_job(result.output.strip())
        assert job is not None and job.args == [args[0]]
        return
    refused(result, *fragments)
    assert cli.snapshot() == before


def test_send_accepts_what_round_trips(cli: Cli) -> None:
    result = cli.run(
        "send", cli.app, "echo", "--json", '{"args": [1.5, [true, null]], "kwargs": {"k": "é"}}'
    )
    assert result.exit_code == 0, result.output
    job = cli.store.get_job(result.output.strip())
    assert job is not None
    assert (job.args, job.kwargs) == ([1.5, [True, None]], {"k": "é"})


#: ``rota schedules add`` of a command schedule, up to its options.
ADD = ["schedules", "add", "s", "--every", "60"]


@pytest.mark.parametrize(
    ("command", "fragments"),
    [
        (["queues", "pause", ""], ["queue must be a non-empty string"]),
        (["queues", "resume", " q"], ["surrounding spaces"]),
        (["queues", "purge", "--yes", "q\n"], ["control characters"]),
        (["queues", "pause", "q" * 201], ["201 characters; at most 200"]),
        (["limits", "set", "", "3"], ["limit key must be a non-empty string"]),
        (["limits", "set", "k", "2000000"], ["limit must be at most 1000000"]),
        (["limits", "set", "--", "k", "-1"], ["-1 is not in the range"]),
        (["limits", "set", "k", "-1"], ["-1 is not in the range"]),
        (["limits", "rate", "k", "-1"], ["rate '-1' is not valid"]),
        (["limits", "clear", "\x00"], ["control characters"]),
        (["limits", "reset", ""], ["limit key must be a non-empty"]),
        (["schedules", "pause", ""], ["schedule name must be a non-empty string"]),
        (["schedules", "resume", "\t"], ["schedule name must be a non-empty"]),
        (["schedules", "remove", "x\ny"], ["control characters"]),
        (["schedules", "run-now", ""], ["schedule name must be"]),
        (["schedules", "show", ""], ["schedule name must be"]),
        ([*ADD, "--backoff", "1,2", "--", "true"], ["--backoff goes with --retries"]),
        (
            [*ADD, "--retries", "1", "--backoff", "5m,1m", "--", "true"],
            ["'--backoff'", "the base (5m) is longer than the max (1m)"],
        ),
        (
            [*ADD, "--retries", "1", "--backoff", "30s", "--", "true"],
            ["'--backoff'", "give BASE,MAX (e.g. 30s,1h), not '30s'"],
        ),
        ([*ADD, "--retries", "-1", "--", "true"], ["'--retries'", "-1 is not in the range"]),
        (
            [*ADD, "--timeout", "soon", "--", "true"],
            ["'--timeout'", "timeout 'soon' is not a duration"],
        ),
        ([*ADD, "--timeout", "0", "--", "true"], ["'--timeout'", "timeout must be above 0"]),
        (
            [*ADD, "--overlap", "never", "--", "true"],
            ["'--overlap'", "'never' is not one of 'allow', 'skip', 'queue'"],
        ),
        (
            ["schedules", "add", "s", "--every", "0", "--", "true"],
            ["Invalid value for '--every': interval must be above 0, got '0'"],
        ),
        (
            ["schedules", "add", "s", "--every", "-1m", "--", "true"],
            ["Invalid value for '--every': interval must not be negative, got '-1m'"],
        ),
        (
            [*ADD, "--ok-codes", "0,256", "--", "true"],
            ["Invalid value for '--ok-codes': 256 is not an exit code: they are 0 to 255"],
        ),
        (
            ["send", "--ok-codes", "256", "--cmd", "--", "true"],
            ["Invalid value for '--ok-codes': 256 is not an exit code: they are 0 to 255"],
        ),
        (
            ["send", "--ok-codes=-1", "--cmd", "--", "true"],
            ["Invalid value for '--ok-codes': -1 is not an exit code: they are 0 to 255"],
        ),
        (
            ["send", "--ok-codes", "0,abc", "--cmd", "--", "true"],
            ["Invalid value for '--ok-codes': '0,abc' is not a list of exit codes such as 0,2"],
        ),
        (
            ["schedules", "add", "s", "--every", "soon", "--", "true"],
            ["'--every'", "interval 'soon' is not a duration"],
        ),
        (
            ["schedules", "add", "s", "--every", "1e300", "--", "true"],
            ["'--every'", "interval '1e300' is too long: at most 100 years"],
        ),
        (
            ["schedules", "add", "x23", "--at", "9999-12-31T23:59:59", "--", "echo", "hi"],
            ["at() time 9999-12-31 23:59:59 UTC is past 9999-12-31 00:00 UTC"],
        ),
        (
            ["schedules", "add", "s", "--cron", "61 * * * *", "--", "true"],
            ["'--cron'", "cron field 'minute' has invalid value '61'"],
        ),
        (
            ["schedules", "add", "s", "--cron", "0 * * * *", "--tz", "Mars/Base", "--", "true"],
            ["'--tz'", "unknown time zone 'Mars/Base'"],
        ),
        (["jobs", "list", "--queue", ""], ["'--queue'", "queue must be a non-empty"]),
        (["jobs", "retry", "--failed", "--task", ""], ["'--task'", "task name must be"]),
        (["jobs", "export", "--queue", " x"], ["surrounding spaces"]),
    ],
)
def test_steering_commands_refuse_bad_names_and_values(
    cli: Cli, command: list[str], fragments: list[str]
) -> None:
    before = cli.snapshot()
    refused(cli.run(*command), *fragments)
    assert cli.snapshot() == before


@pytest.mark.parametrize("command", [["worker"], ["worker", "--processes", "2"], ["run"]])
def test_a_worker_without_app_needs_commands(cli: Cli, command: list[str]) -> None:
    before = cli.snapshot()
    refused(cli.run(*command), "missing APP", "--commands to run only command lines")
    assert cli.snapshot() == before


@pytest.mark.parametrize("every", ["0", "nan", "inf", "2h", "soon"])
def test_status_watch_refuses_a_bad_interval(cli: Cli, every: str) -> None:
    refused(cli.run("status", f"--watch={every}"), "'--watch'")
