"""``rota schedules add`` and ``rota schedules edit`` set a schedule's
misfire policy, grace and jitter as the Python and REST APIs do; a replace
by ``add`` names the settings it put back to their defaults, and ``edit``
changes only what it is given. Run in-process with click's CliRunner against
a real SQLite store in ``tmp_path``."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from rota import App
from rota.cli import main
from rota.models import Schedule

pytestmark = pytest.mark.usefixtures("isolated_imports")

APP_SOURCE = """
    import rota

    app = rota.App("{url}")

    @app.task
    def tick(name):
        return name
"""


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    value = App(f"sqlite:///{tmp_path / 'rota.db'}")
    value.store.now()  # the store exists, empty
    (tmp_path / "ticks.py").write_text(textwrap.dedent(APP_SOURCE).format(url=value.url))
    yield value
    value.close()


def rota(app: App, *args: str) -> Result:
    runner = CliRunner(env={"ROTA_URL": None, "COLUMNS": None, "TTY_COMPATIBLE": None})
    return runner.invoke(main, ["--url", app.url, *args], catch_exceptions=False)


def app_spec(app: App) -> str:
    return f"{Path(app.url.removeprefix('sqlite:///')).parent / 'ticks.py'}:app"


def stored(app: App, name: str) -> Schedule:
    found = app.store.get_schedule(name)
    assert found is not None
    return found


def add_grace10(app: App, *flags: str) -> Result:
    return rota(
        app, "schedules", "add", "grace10", "--every", "10", "--app", app_spec(app),
        "--task", "tick", *flags, "--", "grace10",
    )  # fmt: skip


def test_add_stores_misfire_grace_and_jitter_and_show_prints_them(app: App) -> None:
    added = add_grace10(app, "--misfire", "all", "--grace", "2m", "--jitter", "1.5")
    assert added.exit_code == 0, added.output
    found = stored(app, "grace10")
    assert (found.misfire, found.grace, found.jitter) == ("all", 120.0, 1.5)
    shown = rota(app, "schedules", "show", "grace10").stdout
    assert "misfire    all (grace 120 s)" in shown
    assert "jitter     1.5 s" in shown


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--misfire", "latest"), "schedule 'grace10': misfire must be 'coalesce' or 'all'"),
        (("--grace", "-3"), "grace must not be negative, got '-3'"),
        (("--jitter", "soon"), "jitter 'soon' is not a duration"),
    ],
)
def test_add_refuses_bad_policies_with_the_admin_layers_words(
    app: App, flags: tuple[str, ...], message: str
) -> None:
    refused = add_grace10(app, *flags)
    assert refused.exit_code == 2, refused.output
    assert message in refused.stderr
    assert app.store.get_schedule("grace10") is None


def test_add_of_an_existing_name_replaces_it_and_names_what_went_back_to_defaults(
    app: App,
) -> None:
    assert add_grace10(app, "--grace", "2", "--jitter", "1", "--queue", "q1").exit_code == 0
    replaced = rota(
        app, "schedules", "add", "grace10", "--every", "10", "--app", app_spec(app),
        "--task", "tick", "--jitter", "4", "--", "grace10b",
    )  # fmt: skip
    assert replaced.exit_code == 0, replaced.output
    assert replaced.stdout.startswith("replaced schedule grace10: every 10 seconds:")
    assert replaced.stderr == (
        "back to the default, as not given: grace none (was 2 s); queue 'default' "
        "(was 'q1'). 'rota schedules edit grace10' changes only the settings it is given\n"
    )
    found = stored(app, "grace10")
    assert (found.grace, found.jitter, found.job_options["queue"]) == (None, 4.0, "default")


def test_add_of_an_existing_name_with_the_same_settings_says_nothing_was_reset(
    app: App,
) -> None:
    for _ in range(2):
        added = rota(app, "schedules", "add", "c", "--every", "60", "--retries", "2", "--", "true")
        assert added.exit_code == 0, added.output
    assert added.stdout.startswith("replaced schedule c:")
    assert added.stderr == ""
    again = rota(app, "schedules", "add", "c", "--every", "60", "--", "true")
    assert "retries 0 (was 2)" in again.stderr


def test_edit_changes_only_the_settings_it_is_given(app: App) -> None:
    assert add_grace10(app, "--grace", "2", "--queue", "q1", "--retries", "3").exit_code == 0
    before = stored(app, "grace10")
    edited = rota(
        app, "schedules", "edit", "grace10", "--grace", "5", "--jitter", "3", "--misfire", "all",
        "--app", app_spec(app),
    )  # fmt: skip
    assert edited.exit_code == 0, edited.output
    assert edited.stdout == (
        "updated schedule grace10: every 10 seconds\n"
        "  misfire all (was coalesce)\n"
        "  grace 5 s (was 2 s)\n"
        "  jitter 3 s (was 0 s)\n"
    )
    after = stored(app, "grace10")
    assert (after.misfire, after.grace, after.jitter) == ("all", 5.0, 3.0)
    assert after.job_options == before.job_options  # queue, retries kept
    assert (after.payload, after.next_fire) == (before.payload, before.next_fire)
    entries, _ = app.admin.audit()
    assert entries[0].action == "schedule.update"
    assert entries[0].details["changed"] == ["grace", "jitter", "misfire"]


def test_edit_removes_the_grace_changes_the_trigger_and_pauses(app: App) -> None:
    added = rota(app, "schedules", "add", "c", "--every", "60", "--grace", "9", "--", "true")
    assert added.exit_code == 0, added.output
    edited = rota(
        app, "schedules", "edit", "c", "--grace", "none", "--cron", "0 3 * * *", "--paused"
    )
    assert edited.exit_code == 0, edited.output
    assert edited.stdout == (
        "updated schedule c: cron 0 3 * * * (UTC)\n"
        "  trigger cron 0 3 * * * (UTC) (was every minute)\n"
        "  grace none (was 9 s)\n"
        "  paused\n"
    )
    found = stored(app, "c")
    assert (found.grace, found.enabled, found.trigger["type"]) == (None, False, "cron")


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("c",), 2, "nothing to change: give a trigger or a setting to set"),
        (("nope", "--jitter", "1"), 1, "no schedule named 'nope'"),
        (("c", "--grace", "-1"), 2, "grace must not be negative"),
        (("c", "--misfire", "x"), 2, "schedule 'c': misfire must be 'coalesce' or 'all'"),
        (("c", "--every", "10", "--at", "2030-01-01"), 2, "give exactly one trigger"),
        (("c", "--backoff", "1s,5m"), 2, "--backoff goes with --retries"),
    ],
)
def test_edit_refuses_and_changes_nothing(
    app: App, args: tuple[str, ...], code: int, message: str
) -> None:
    assert rota(app, "schedules", "add", "c", "--every", "60", "--", "true").exit_code == 0
    before = stored(app, "c")
    refused = rota(app, "schedules", "edit", *args)
    assert refused.exit_code == code, refused.output
    assert message in refused.stderr
    assert stored(app, "c") == before


def test_edit_of_a_task_schedule_needs_the_app_that_defines_the_task(app: App) -> None:
    assert add_grace10(app).exit_code == 0
    refused = rota(app, "schedules", "edit", "grace10", "--jitter", "2")
    assert refused.exit_code == 1
    assert "runs task 'tick': give --app, the app that defines it" in refused.stderr
    assert stored(app, "grace10").jitter == 0.0


@pytest.mark.parametrize("command", [("list",), ("show", "grace10")])
def test_list_and_show_take_read_url(app: App, command: tuple[str, ...]) -> None:
    """The option reaches the app: on a SQLite store a read URL is refused."""
    replica = "postgresql://rota:s3cr3t@db-replica:5432/jobs"
    result = rota(app, "schedules", *command, "--read-url", replica)
    assert result.exit_code == 2, result.output
    assert "works only with a PostgreSQL or MySQL store" in result.output
    assert "s3cr3t" not in result.output
