"""The CLI acts through app.admin: its actions are audited as the login user, origin cli."""

from __future__ import annotations

import getpass
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from rota.admin import Actor
from rota.cli import main
from rota.cli._actor import cli_actor
from rota.stores import Store, open_store


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'rota.db'}"


@pytest.fixture
def store(url: str) -> Iterator[Store]:
    opened = open_store(url)
    yield opened
    opened.close()


def rota(url: str, *args: str) -> str:
    runner = CliRunner(env={"ROTA_URL": None, "USER": "carol", "COLUMNS": "200"})
    result = runner.invoke(main, ["--url", url, *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_queues_pause_writes_an_audit_entry_with_origin_cli(url: str, store: Store) -> None:
    assert rota(url, "queues", "pause", "emails") == "paused queue emails\n"
    [entry] = store.audit()[0]
    assert (entry.actor, entry.role, entry.origin, entry.address) == ("carol", "admin", "cli", None)
    assert (entry.action, entry.target) == ("queue.pause", "emails")
    assert [q.name for q in store.queues() if q.paused] == ["emails"]


def test_rota_audit_lists_newest_first_and_filters(url: str, store: Store) -> None:
    rota(url, "queues", "pause", "emails")
    rota(url, "limits", "set", "spiders", "3")
    rota(url, "queues", "resume", "emails")
    out = rota(url, "audit")
    lines = [line for line in out.splitlines()[1:] if line.strip()]
    assert [line.split()[7] for line in lines] == ["queue.resume", "limit.set", "queue.pause"]
    assert '{"limit": 3}' in lines[1] and "carol" in lines[1] and " cli " in lines[1]
    out = rota(url, "audit", "--action", "queue.pause")
    assert "queue.pause" in out and "queue.resume" not in out
    assert rota(url, "audit", "--actor", "dave") == ""
    assert len([x for x in rota(url, "audit", "-n", "1").splitlines()[1:] if x.strip()]) == 1


def test_rota_audit_refuses_a_bad_limit(url: str) -> None:
    result = CliRunner().invoke(main, ["--url", url, "audit", "--limit", "0"])
    assert result.exit_code == 2 and "0 is not in the range" in result.output


def test_without_user_the_actor_is_the_login_name_the_system_knows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("USER", raising=False)
    assert cli_actor() == Actor(name=getpass.getuser() or "cli", origin="cli")


def test_rota_send_is_audited_with_the_host_it_was_sent_to(url: str, store: Store) -> None:
    to_host = rota(url, "send", "--cmd", "--host", "web-3", "--", "echo", "hi").strip()
    anywhere = rota(url, "send", "--cmd", "--in", "1m", "--", "true").strip()
    sent = store.audit(action="job.send")[0]
    assert [(e.actor, e.origin, e.target) for e in sent] == [
        ("carol", "cli", anywhere),
        ("carol", "cli", to_host),
    ]
    assert sent[1].details == {
        "task": "rota.cmd",
        "duplicate": False,
        "delay": 0.0,
        "host": "web-3",
        "command": "echo hi",
    }
    assert sent[0].details == {
        "task": "rota.cmd",
        "duplicate": False,
        "delay": 60.0,
        "command": "true",
    }
    job = store.get_job(to_host)
    assert job is not None and job.host == "web-3"
