"""``rota run`` takes the options of the worker it runs as ``rota worker``
does: the same names, defaults, ranges and help, reaching the same
:class:`rota.worker.Worker` arguments."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from rota.cli import main
from rota.cli.run import run
from rota.cli.worker import worker
from rota.models import DEFAULT_HOST_GRACE
from rota.worker import Worker

#: ``rota worker`` options that ``rota run`` has no use for, or names otherwise:
#: one process (no --processes), always a scheduler, and its --host is the
#: dashboard's (the worker's host name is --worker-host).
WORKER_ONLY = {"processes", "scheduler", "host"}


def _options(command: click.Command) -> dict[str, click.Option]:
    return {p.name: p for p in command.params if isinstance(p, click.Option) and p.name}


def test_rota_run_offers_every_option_of_a_single_worker_with_the_same_definition() -> None:
    ours, theirs = _options(run), _options(worker)
    shared = set(theirs) - WORKER_ONLY
    assert shared <= set(ours), sorted(shared - set(ours))
    for name in shared:
        mine, other = ours[name], theirs[name]
        assert (mine.opts, mine.help, mine.default) == (other.opts, other.help, other.default)
        assert repr(mine.type) == repr(other.type), name


def _run_until_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str
) -> tuple[Worker, str]:
    """Invoke ``rota run --commands --no-web ARGS`` and return the worker it
    built, stopped where it would start running jobs."""
    built: list[Worker] = []
    monkeypatch.setattr(Worker, "run", lambda self: built.append(self))
    result = CliRunner().invoke(
        main,
        ["--url", f"sqlite:///{tmp_path / 'r.db'}", "run", "--commands", "--no-web", *args],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert len(built) == 1
    return built[0], result.output


def test_rota_run_passes_the_worker_options_to_its_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, _ = _run_until_start(
        tmp_path,
        monkeypatch,
        "--max-cpu", "85",
        "--max-mem", "70.5",
        "--host-grace", "2m",
        "--grace", "7",
        "--heartbeat", "2",
        "--prefetch", "3",
        "--worker-host", "web-7",
    )  # fmt: skip
    assert (engine._gate.max_cpu, engine._gate.max_mem) == (85.0, 70.5)
    assert (engine.host_scope.name, engine.host_scope.grace) == ("web-7", 120.0)
    assert engine.grace == 7.0
    assert engine.heartbeat_every == 2.0
    assert engine._ahead.fixed == 3
    assert engine.with_scheduler


def test_rota_run_without_worker_options_keeps_the_workers_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, _ = _run_until_start(tmp_path, monkeypatch)
    assert (engine._gate.max_cpu, engine._gate.max_mem) == (None, None)
    assert engine.host_scope.grace == DEFAULT_HOST_GRACE == 300.0
    assert (engine.grace, engine.heartbeat_every, engine._ahead.fixed) == (30.0, 5.0, None)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--max-cpu", "0"], "'--max-cpu'"),
        (["--max-mem", "101"], "'--max-mem'"),
        (["--host-grace", "soon"], "'--host-grace'"),
        (["--heartbeat", "60"], "'--heartbeat'"),
    ],
)
def test_rota_run_refuses_bad_worker_options_as_rota_worker_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], fragment: str
) -> None:
    monkeypatch.setattr(Worker, "run", lambda self: pytest.fail("the worker started"))
    url = f"sqlite:///{tmp_path / 'r.db'}"
    for command in (["run", "--no-web"], ["worker"]):
        result = CliRunner().invoke(main, ["--url", url, *command, "--commands", *args])
        assert result.exit_code == 2, (command, result.output)
        assert fragment in result.output, (command, result.output)


def test_rota_run_refuses_a_host_grace_within_a_heartbeat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Worker, "run", lambda self: pytest.fail("the worker started"))
    result = CliRunner().invoke(
        main,
        ["--url", f"sqlite:///{tmp_path / 'r.db'}", "run", "--commands", "--no-web",
         "--host-grace", "3", "--heartbeat", "5"],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "the host grace (3 s) must be longer than the heartbeat interval (5 s)" in result.output
