"""User accounts through app.admin: hashing, hashed tokens, roles, audit."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from rota import App
from rota._users import hash_token
from rota.admin import NO_ROLE, NOT_LOGGED_IN, Actor
from rota.errors import Conflict, Forbidden, InvalidArgument, NotFound

PASSWORD = "correct horse battery"


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    made = App(f"sqlite:///{tmp_path / 'users.db'}")
    yield made
    made.close()


def actions(app: App) -> list[tuple[str, str, str]]:
    entries, _ = app.store.audit(limit=100)
    return [(e.actor, e.action, e.target) for e in reversed(entries)]


def test_a_password_is_stored_as_an_argon2_hash_and_checked(app: App) -> None:
    app.admin.add_user("ada", "operator", PASSWORD)
    stored = app.store.get_user("ada")
    assert stored is not None and stored.role == "operator"
    assert stored.password_hash.startswith("$argon2id$")
    assert PASSWORD not in stored.password_hash
    found = app.admin.authenticate("ada", PASSWORD)
    assert found is not None and found.name == "ada"


@pytest.mark.parametrize(
    ("name", "password"),
    [("ada", "wrong password"), ("ada", ""), ("bob", PASSWORD), ("", PASSWORD), ("a b", "x")],
)
def test_wrong_credentials_are_refused_and_audited(app: App, name: str, password: str) -> None:
    app.admin.add_user("ada", "viewer", PASSWORD)
    web = Actor(name="anonymous", role="viewer", origin="web", address="10.1.2.3")
    assert app.admin.authenticate(name, password, by=web) is None
    entries, _ = app.store.audit(limit=10, action="user.login_failed")
    # the name tried is the target; no one acted, with no role, from the caller's place
    assert [(e.actor, e.role, e.origin, e.address, e.target) for e in entries] == [
        (NOT_LOGGED_IN, NO_ROLE, "web", "10.1.2.3", name or "?")
    ]
    assert entries[0].details == {}  # (nothing of the password)


def test_the_actor_of_failed_logins_is_no_user_and_no_one_acts_as_it(app: App) -> None:
    with pytest.raises(InvalidArgument, match="must be 1 to 64 letters"):
        app.admin.add_user(NOT_LOGGED_IN, "viewer", PASSWORD)
    with pytest.raises(InvalidArgument, match="kept for failed logins"):
        app.admin.pause_queue("default", by=Actor(name=NOT_LOGGED_IN, origin="cli"))
    assert app.store.audit(limit=10)[0] == []


def test_a_changed_password_replaces_the_old_one(app: App) -> None:
    app.admin.add_user("ada", "viewer", PASSWORD)
    app.admin.set_password("ada", "another long one")
    assert app.admin.authenticate("ada", PASSWORD) is None
    assert app.admin.authenticate("ada", "another long one") is not None


def test_a_token_is_shown_once_and_stored_only_as_its_sha256(app: App) -> None:
    app.admin.add_user("ada", "operator", PASSWORD)
    secret = app.admin.create_token("ada", "ci")
    assert len(secret) >= 40
    assert hash_token(secret) == hashlib.sha256(secret.encode()).hexdigest()
    user = app.admin.user_for_token(secret)
    assert user is not None and user.name == "ada" and user.tokens == ("ci",)
    assert app.admin.user_for_token(secret + "x") is None
    assert app.admin.user_for_token("") is None
    # the secret is nowhere in the database files, its hash is
    app.store.close()
    folder = Path(app.url.removeprefix("sqlite:///")).parent
    raw = b"".join(p.read_bytes() for p in folder.glob("users.db*") if p.is_file())
    assert secret.encode() not in raw
    assert hash_token(secret).encode() in raw


def test_a_revoked_token_or_removed_user_no_longer_authenticates(app: App) -> None:
    app.admin.add_user("ada", "operator", PASSWORD)
    first = app.admin.create_token("ada", "ci")
    second = app.admin.create_token("ada", "laptop")
    app.admin.revoke_token("ada", "ci")
    assert app.admin.user_for_token(first) is None
    assert app.admin.user_for_token(second) is not None
    with pytest.raises(NotFound, match="no token labelled 'ci'"):
        app.admin.revoke_token("ada", "ci")
    app.admin.remove_user("ada")
    assert app.admin.user_for_token(second) is None
    assert app.admin.authenticate("ada", PASSWORD) is None
    with pytest.raises(NotFound, match="no user named 'ada'"):
        app.admin.remove_user("ada")


def test_roles_and_their_changes(app: App) -> None:
    app.admin.add_user("ada", "viewer", PASSWORD)
    app.admin.set_role("ada", "admin")
    assert [(u.name, u.role) for u in app.admin.users()] == [("ada", "admin")]
    with pytest.raises(InvalidArgument, match="role must be one of viewer, operator, admin"):
        app.admin.set_role("ada", "root")
    with pytest.raises(NotFound):
        app.admin.set_role("bob", "viewer")
    assert [(u.name, u.role) for u in app.admin.users()] == [("ada", "admin")]


def test_only_an_admin_manages_users(app: App) -> None:
    app.admin.add_user("ada", "viewer", PASSWORD)
    for role in ("viewer", "operator"):
        actor = Actor(name="eve", role=role, origin="web")
        with pytest.raises(Forbidden, match="needs the admin role"):
            app.admin.add_user("mallory", "admin", PASSWORD, by=actor)
        with pytest.raises(Forbidden):
            app.admin.set_role("ada", "admin", by=actor)
        with pytest.raises(Forbidden):
            app.admin.create_token("ada", "x", by=actor)
        with pytest.raises(Forbidden):
            app.admin.users(by=actor)
    assert [(u.name, u.role, u.tokens) for u in app.admin.users()] == [("ada", "viewer", ())]
    boss = Actor(name="root", role="admin", origin="cli")
    app.admin.add_user("bob", "operator", PASSWORD, by=boss)
    assert ("root", "user.add", "bob") in actions(app)


@pytest.mark.parametrize(
    ("name", "role", "password", "error", "message"),
    [
        ("", "viewer", PASSWORD, InvalidArgument, "user name must be 1 to 64"),
        ("a b", "viewer", PASSWORD, InvalidArgument, "user name must be 1 to 64"),
        ("x" * 65, "viewer", PASSWORD, InvalidArgument, "user name must be 1 to 64"),
        ("bob", "root", PASSWORD, InvalidArgument, "role must be one of"),
        ("bob", "viewer", "short", InvalidArgument, "password must be 8 to 1024"),
        ("bob", "viewer", 12345678, InvalidArgument, "password must be a string"),
        ("ada", "viewer", PASSWORD, Conflict, "a user named 'ada' exists already"),
    ],
)
def test_bad_users_are_refused_and_nothing_changes(
    app: App, name: object, role: str, password: object, error: type[Exception], message: str
) -> None:
    app.admin.add_user("ada", "operator", PASSWORD)
    before = actions(app)
    with pytest.raises(error, match=message):
        app.admin.add_user(name, role, password)  # type: ignore[arg-type]
    assert [(u.name, u.role) for u in app.admin.users()] == [("ada", "operator")]
    assert actions(app) == before


def test_every_user_change_is_audited_without_secrets(app: App) -> None:
    app.admin.add_user("ada", "viewer", PASSWORD)
    app.admin.set_role("ada", "operator")
    app.admin.set_password("ada", "another long one")
    secret = app.admin.create_token("ada", "ci")
    app.admin.revoke_token("ada", "ci")
    app.admin.remove_user("ada")
    assert [a for _, a, _ in actions(app)] == [
        "user.add",
        "user.role",
        "user.password",
        "user.token",
        "user.revoke",
        "user.remove",
    ]
    entries, _ = app.store.audit(limit=100)
    text = repr(entries)
    assert PASSWORD not in text and "another long one" not in text and secret not in text
    assert next(e for e in entries if e.action == "user.role").details == {
        "role": "operator",
        "previous": "viewer",
    }
