"""``rota schedules list`` and ``show`` say why a schedule's last job failed
and tell a last fire that sent no job (dropped or skipped) from one that
did. Run in-process with click's CliRunner against a real SQLite store."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from rota import App
from rota.cli import main
from rota.cli._support import fmt_when
from rota.models import Outcome
from rota.scheduling.define import schedule_job

ERROR = "OSError: backup disk full\n  while writing /srv/backup"


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    value = App(f"sqlite:///{tmp_path / 'rota.db'}")
    value.store.now()  # the store exists, empty
    yield value
    value.close()


def rota(app: App, *args: str) -> Result:
    runner = CliRunner(env={"ROTA_URL": None, "COLUMNS": "250", "TTY_COMPATIBLE": None})
    return runner.invoke(main, ["--url", app.url, *args], catch_exceptions=False)


def fire(app: App, *, job: bool) -> float:
    """Fire schedule ``backup`` at its next fire: with a job, or without one
    (a fire dropped as older than the grace); return the fire time."""
    found = app.store.get_schedule("backup")
    assert found is not None and found.next_fire is not None
    when = found.next_fire
    sent = schedule_job(found, job_id=f"backup-{when:.0f}", fire_time=when) if job else None
    assert app.store.fire_schedule("backup", when, when + 3600, sent) in ("fired", "dropped")
    return when


def row(shown: str, name: str) -> str:
    """The value of field ``name`` of ``rota schedules show``."""
    found = re.search(rf"^{name} +(.*)$", shown, re.MULTILINE)
    assert found is not None, shown
    return found.group(1)


def when(epoch: float) -> str:
    """A time as the CLI prints it, without its distance from now."""
    return fmt_when(epoch, 0)[:23]


def fail_the_job(app: App) -> None:
    [claimed] = app.store.claim("test-worker", ["default"], 1)
    outcome = Outcome(claimed.id, claimed.token, ok=False, error=ERROR, traceback="Traceback")
    assert app.store.finish([outcome])


@pytest.fixture
def backup(app: App) -> None:
    added = rota(app, "schedules", "add", "backup", "--every", "1h", "--", "true")
    assert added.exit_code == 0, added.output


@pytest.mark.usefixtures("backup")
def test_show_and_list_say_why_the_last_job_failed(app: App) -> None:
    first = fire(app, job=True)
    fail_the_job(app)
    shown = rota(app, "schedules", "show", "backup").stdout
    assert row(shown, "last job").startswith(f"backup-{first:.0f} (failed), fire {when(first)}")
    assert row(shown, "last error") == "OSError: backup disk full …"
    assert "while writing" not in shown
    assert row(shown, "last fire").startswith(when(first))
    assert "no job sent" not in shown
    listed = rota(app, "schedules", "list").stdout
    assert "failed: OSError: backup disk full …" in listed


@pytest.mark.usefixtures("backup")
def test_a_fire_dropped_after_the_last_job_reads_as_no_job_sent(app: App) -> None:
    first = fire(app, job=True)
    dropped = fire(app, job=False)
    shown = rota(app, "schedules", "show", "backup").stdout
    last_fire = row(shown, "last fire")
    assert last_fire.startswith(when(dropped))
    assert last_fire.endswith(", no job sent: dropped or skipped (the scheduler's log says why)")
    assert row(shown, "last job").startswith(f"backup-{first:.0f} (queued), fire {when(first)}")
    assert "last error" not in shown  # queued: it has not failed
    listed = rota(app, "schedules", "list").stdout
    assert ", no job sent" in listed
    assert "dropped" not in listed  # the list only says no job was sent


@pytest.mark.usefixtures("backup")
def test_a_schedule_whose_only_fire_was_dropped_says_no_job_was_sent(app: App) -> None:
    fire(app, job=False)
    shown = rota(app, "schedules", "show", "backup").stdout
    assert row(shown, "last fire").endswith(
        ", no job sent: dropped or skipped (the scheduler's log says why)"
    )
    assert row(shown, "last job") == "-"


@pytest.mark.usefixtures("backup")
def test_a_fire_with_its_job_reads_as_a_plain_last_fire(app: App) -> None:
    fire(app, job=True)
    shown = rota(app, "schedules", "show", "backup").stdout
    assert "no job sent" not in shown
    assert "no job sent" not in rota(app, "schedules", "list").stdout
