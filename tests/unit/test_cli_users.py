"""``rota users ...`` run in-process with click's CliRunner against a real store."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from rota import App
from rota.cli import main

PASSWORD = "a long enough password"


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'rota.db'}"


def rota(url: str, *args: str, stdin: str | None = None) -> Result:
    return CliRunner(env={"USER": "carol"}).invoke(
        main, ["--url", url, "users", *args], input=stdin
    )


def test_users_are_managed_from_the_cli_and_audited_as_the_login_user(url: str) -> None:
    added = rota(url, "add", "ann", "--role", "operator", "--password-stdin", stdin=PASSWORD)
    assert added.exit_code == 0, added.output
    assert "added ann (operator)" in added.output
    token = rota(url, "token", "ann", "ci")
    assert token.exit_code == 0, token.output
    secret = token.stdout.strip()
    assert rota(url, "role", "ann", "admin").exit_code == 0
    listed = rota(url, "list")
    assert listed.exit_code == 0 and "ann" in listed.stdout and "admin" in listed.stdout
    assert "ci" in listed.stdout and secret not in listed.stdout
    assert rota(url, "passwd", "ann", "--password-stdin", stdin="another password").exit_code == 0

    app = App(url)
    try:
        assert app.admin.user_for_token(secret) is not None
        assert app.admin.authenticate("ann", "another password") is not None
        entries, _ = app.store.audit(limit=10)
        assert {(e.actor, e.origin) for e in entries} == {("carol", "cli")}  # as any command
        assert [e.action for e in reversed(entries)] == [
            "user.add",
            "user.token",
            "user.role",
            "user.password",
        ]
        assert rota(url, "revoke", "ann", "ci").exit_code == 0
        assert app.admin.user_for_token(secret) is None
        assert rota(url, "remove", "ann").exit_code == 0
        assert app.admin.users() == []
    finally:
        app.close()


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (("add", "bob", "--role", "root", "--password-stdin"), PASSWORD, "'root' is not one of"),
        (("add", "bob", "--role", "viewer", "--password-stdin"), "short", "8 to 1024 characters"),
        (("add", "a b", "--role", "viewer", "--password-stdin"), PASSWORD, "user name must be"),
        (("add", "bob", "--role", "viewer"), "", "pass --password-stdin"),
        (("remove", "bob"), None, "no user named 'bob'"),
        (("revoke", "ann", "ci"), None, "no token labelled 'ci'"),
    ],
)
def test_bad_input_is_refused_with_a_message(
    url: str, args: tuple[str, ...], stdin: str | None, message: str
) -> None:
    assert (
        rota(url, "add", "ann", "--role", "viewer", "--password-stdin", stdin=PASSWORD).exit_code
        == 0
    )
    answer = rota(url, *args, stdin=stdin)
    assert answer.exit_code != 0
    assert message in answer.output
    app = App(url)
    try:
        assert [(u.name, u.role, u.tokens) for u in app.admin.users()] == [("ann", "viewer", ())]
    finally:
        app.close()
