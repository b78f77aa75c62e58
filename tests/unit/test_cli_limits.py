"""``rota limits reset`` of a key the store does not know: an error, as
for ``rota limits clear`` and ``POST /api/limits/KEY/reset``; run in-process
with click's CliRunner against a real SQLite store in ``tmp_path``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from rota import App, Breaker
from rota.cli import main
from rota.errors import NotFound
from rota.models import Outcome


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    value = App(f"sqlite:///{tmp_path / 'rota.db'}")
    value.store.now()  # the store exists, empty
    yield value
    value.close()


def rota(app: App, *args: str) -> Result:
    runner = CliRunner(env={"ROTA_URL": None, "COLUMNS": None, "TTY_COMPATIBLE": None})
    return runner.invoke(main, ["--url", app.url, *args], catch_exceptions=False)


def actions(app: App) -> list[str]:
    entries, _ = app.admin.audit()
    return [entry.action for entry in entries]


def test_resetting_the_breaker_of_an_unknown_key_fails_and_changes_nothing(app: App) -> None:
    result = rota(app, "limits", "reset", "nosuchhost:1")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        "Error: limit key 'nosuchhost:1' not found: no job with it was claimed and no limit "
        "was set on it (rota limits list shows the keys)\n"
    )
    cleared = rota(app, "limits", "clear", "nosuchhost:1")
    assert (cleared.exit_code, cleared.stderr) == (1, result.stderr), "as clear says it"
    with pytest.raises(NotFound):
        app.admin.clear_limit("nosuchhost:1")
    assert app.store.limits() == [] and actions(app) == []


def test_resetting_a_known_key_whose_breaker_is_closed_changes_nothing(app: App) -> None:
    @app.task(queue="fragile", breaker=Breaker(failures=1, cooldown=600, key="flaky"))
    def fragile() -> None:
        return None

    fragile.send()
    [job] = app.store.claim("test-worker", ["fragile"], 1)  # the store knows the key now
    assert app.store.finish([Outcome(job.id, job.token, ok=True, result=b"null")])
    result = rota(app, "limits", "reset", "flaky")
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr.strip() == "the breaker of flaky was not open; nothing changed"
    assert actions(app) == []
