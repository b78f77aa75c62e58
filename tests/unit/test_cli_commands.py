"""Command lines and command tasks on the command line: ``rota send --cmd``,
``rota send APP TASK`` of a task made with ``app.command``, ``rota schedules
add ... -- CMD`` (click's CliRunner against a real SQLite store)."""

from __future__ import annotations

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
