"""Command lines and command tasks on the command line: ``rota send --cmd``,
``rota send APP TASK`` of a task made with ``app.command``, ``rota schedules
add ... -- CMD`` (click's CliRunner against a real SQLite store)."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from rota.cli import main
from rota.models import JobQuery
from rota.stores import Store, open_store

APP_SOURCE = """
    from rota import App

    app = App()
    report = app.command("report", ["echo", "report"])

    @app.task(name="add")
    def add(a, b):
        return a + b
"""


@dataclass
class Cli:
    """A store, an app file with a command task, and a way to run ``rota``."""

    tmp: Path
    url: str
    app: str
    store: Store
    runner: CliRunner

    def run(self, *args: str, url: bool = True) -> Result:
        """``rota [--url URL] ARGS...``, in ``tmp``."""
        argv = ["--url", self.url, *args] if url else list(args)
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(self.tmp)
            return self.runner.invoke(main, argv)

    def sent(self) -> int:
        """Jobs in the store."""
        return len(self.store.list_jobs(JobQuery()).jobs)


@pytest.fixture
def cli(tmp_path: Path) -> Iterator[Cli]:
    app_file = tmp_path / "fleetapp.py"
    app_file.write_text(textwrap.dedent(APP_SOURCE))
    url = f"sqlite:///{tmp_path / 'fleet.db'}"
    store = open_store(url)
    saved_path, saved_modules = list(sys.path), set(sys.modules)
    runner = CliRunner(env={"ROTA_URL": None, "COLUMNS": "500"})
    yield Cli(tmp_path, url, f"{app_file}:app", store, runner)
    sys.path[:] = saved_path
    for name in set(sys.modules) - saved_modules:
        del sys.modules[name]
    store.close()


def test_send_cmd_refuses_words_between_app_and_the_dashes(cli: Cli) -> None:
    for words, message in (
        (
            [cli.app, "add", "--cmd", "--", "echo"],
            "only APP comes before --, not also add: the whole",
        ),
        (["--cmd", "-q", "q", "a", "b c", "--", "echo"], "not also 'b c'"),
        (["--cmd", "echo", "hi"], "with --cmd, put -- before the command line"),
        ([cli.app, "--cmd", "echo", "hi"], "with --cmd, put -- before the command line"),
    ):
        refused = cli.run("send", *words)
        assert refused.exit_code == 2, (words, refused.output)
        assert message in refused.output, refused.output
    assert cli.sent() == 0
    sent = cli.run("send", cli.app, "--cmd", "-q", "q", "--", "echo", "add")
    assert sent.exit_code == 0, sent.output
    job = cli.store.get_job(sent.stdout.strip())
    assert job is not None and job.args == [["echo", "add"]]


def test_a_command_line_without_the_dashes_is_refused_by_send_and_schedules_add(cli: Cli) -> None:
    for words, message in (
        (
            ["schedules", "add", "bad", "--every", "5m", "echo", "x"],
            "without --task, put -- before the command line: rota schedules add NAME",
        ),
        (
            ["schedules", "add", "bad", "--every", "5m", "ls", "-la"],
            "No such option '-l'. To pass -l in the command line, put -- before the "
            "command line: rota schedules add NAME",
        ),
        (
            ["send", "--cmd", "ls", "-la"],
            "To pass -l in the command line, put -- before the command line: "
            "rota send [APP] --cmd -- CMD ARGS...",
        ),
    ):
        refused = cli.run(*words)
        assert refused.exit_code == 2, (words, refused.output)
        assert message in refused.output, refused.output
    assert cli.store.get_schedule("bad") is None and cli.sent() == 0
    added = cli.run("schedules", "add", "ok", "--every", "5m", "--", "ls", "-la")
    assert added.exit_code == 0, added.output
    assert added.stdout.strip() == "added schedule ok: every 5 minutes: ls -la"
    # a task's arguments still need no --; an unknown option there is not about a command line
    by_task = ["schedules", "add", "t", "--every", "5m", "--app", cli.app, "--task", "add"]
    task = cli.run(*by_task, "1", "2")
    assert task.exit_code == 0, task.output
    odd = cli.run(*by_task, "-x")
    assert odd.exit_code == 2 and "put -- before the command line" not in odd.output


def test_the_words_after_a_command_tasks_name_are_its_extra_args(cli: Cli) -> None:
    sent = cli.run("send", cli.app, "report", "a", "1", "--", "--day", "2026-11-27")
    assert sent.exit_code == 0, sent.output
    job = cli.store.get_job(sent.stdout.strip())
    assert job is not None and (job.task, job.args) == ("report", [])
    assert job.kwargs == {"extra_args": ["a", "1", "--day", "2026-11-27"]}, "words, not JSON"
    bare = cli.store.get_job(cli.run("send", cli.app, "report").stdout.strip())
    assert bare is not None and (bare.args, bare.kwargs) == ([], {})
    by_json = cli.run("send", cli.app, "report", "--json", '{"kwargs": {"extra_args": ["b"]}}')
    job = cli.store.get_job(by_json.stdout.strip())
    assert job is not None and job.kwargs == {"extra_args": ["b"]}
    other = cli.store.get_job(cli.run("send", cli.app, "add", "1", "2").stdout.strip())
    assert other is not None and other.args == [1, 2], "other tasks still read JSON"

    added = cli.run(
        "schedules", "add", "rep", "--every", "1h", "--app", cli.app, "--task", "report",
        "--", "1", "--two",
    )  # fmt: skip
    assert added.exit_code == 0, added.output
    assert added.stdout.strip() == (
        'added schedule rep: every hour: task report(extra_args=["1","--two"])'
    )
    stored = cli.store.get_schedule("rep")
    assert stored is not None
    assert json.loads(stored.payload) == {"args": [], "kwargs": {"extra_args": ["1", "--two"]}}
    both = cli.run("send", cli.app, "report", "a", "--json", "[]")
    assert both.exit_code == 2 and "as ARGS or with --json, not both" in both.output


def test_a_command_line_without_app_or_url_goes_only_to_a_rota_db_that_exists(cli: Cli) -> None:
    here = cli.tmp / "rota.db"
    for words in (
        ["send", "--cmd", "--", "true"],
        ["schedules", "add", "s", "--every", "1h", "--", "true"],
    ):
        refused = cli.run(*words, url=False)
        assert refused.exit_code == 1, refused.output
        assert f"Error: no store given and no {here}: pass --url or set ROTA_URL" in refused.output
        assert not here.exists(), "no store no worker reads"
    made = open_store(f"sqlite:///{here}")  # as a worker or rota run makes it
    try:
        sent = cli.run("send", "--cmd", "--", "true", url=False)
        assert sent.exit_code == 0, sent.output
        assert made.get_job(sent.stdout.strip()) is not None
        added = cli.run("schedules", "add", "s", "--every", "1h", "--", "true", url=False)
        assert added.exit_code == 0 and made.get_schedule("s") is not None, added.output
    finally:
        made.close()
    elsewhere = cli.tmp / "new.db"  # a URL given is a store asked for: made if need be
    given = cli.runner.invoke(
        main, ["send", "--cmd", "--", "true"], env={"ROTA_URL": f"sqlite:///{elsewhere}"}
    )
    assert given.exit_code == 0 and elsewhere.exists(), given.output
