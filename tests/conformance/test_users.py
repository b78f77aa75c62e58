"""Users and API tokens on every store: kept, replaced, revoked, removed whole."""

from __future__ import annotations

import hashlib

import pytest

from rota.errors import InvalidArgument
from rota.models import User
from rota.stores import Store


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def user(name: str = "ada", role: str = "operator", password_hash: str = "$argon2id$x") -> User:
    return User(name=name, role=role, password_hash=password_hash)


def test_a_new_user_is_stored_with_the_store_clock(store: Store) -> None:
    before = store.now()
    store.put_user(user())
    found = store.get_user("ada")
    assert found is not None
    assert (found.name, found.role, found.password_hash, found.tokens) == (
        "ada",
        "operator",
        "$argon2id$x",
        (),
    )
    assert before - 1 <= found.created_at <= store.now() + 1
    assert store.get_user("bob") is None


def test_put_user_again_changes_role_and_hash_and_keeps_tokens(store: Store) -> None:
    store.put_user(User("ada", "viewer", "h1", created_at=1_700_000_000.0))
    store.put_token("ada", "ci", digest("s1"))
    store.put_user(User("ada", "admin", "h2", created_at=1_800_000_000.0))
    found = store.get_user("ada")
    assert found == User("ada", "admin", "h2", 1_700_000_000.0, ("ci",))


def test_users_are_listed_by_name_with_their_token_labels(store: Store) -> None:
    assert store.users() == []
    for name in ("carol", "ada", "bob"):
        store.put_user(user(name))
    store.put_token("bob", "laptop", digest("b1"))
    store.put_token("bob", "ci", digest("b2"))
    listed = store.users()
    assert [u.name for u in listed] == ["ada", "bob", "carol"]
    assert [u.tokens for u in listed] == [(), ("ci", "laptop"), ()]


def test_a_token_finds_its_user_until_revoked(store: Store) -> None:
    store.put_user(user("ada"))
    store.put_user(user("bob", role="viewer"))
    store.put_token("ada", "ci", digest("secret-a"))
    store.put_token("bob", "ci", digest("secret-b"))
    found = store.user_for_token_hash(digest("secret-a"))
    assert found is not None and found.name == "ada" and found.tokens == ("ci",)
    other = store.user_for_token_hash(digest("secret-b"))
    assert other is not None and other.name == "bob" and other.role == "viewer"
    assert store.user_for_token_hash(digest("nobody")) is None

    assert store.delete_token("ada", "ci") is True
    assert store.delete_token("ada", "ci") is False
    assert store.user_for_token_hash(digest("secret-a")) is None
    assert store.user_for_token_hash(digest("secret-b")) is not None


def test_a_token_of_the_same_label_replaces_the_old_one(store: Store) -> None:
    store.put_user(user())
    store.put_token("ada", "ci", digest("old"))
    store.put_token("ada", "ci", digest("new"))
    assert store.user_for_token_hash(digest("old")) is None
    found = store.user_for_token_hash(digest("new"))
    assert found is not None and found.tokens == ("ci",)


def test_deleting_a_user_revokes_its_tokens(store: Store) -> None:
    store.put_user(user())
    store.put_token("ada", "ci", digest("s"))
    assert store.delete_user("ada") is True
    assert store.delete_user("ada") is False
    assert store.get_user("ada") is None
    assert store.user_for_token_hash(digest("s")) is None
    # a new user of the same name does not inherit the old tokens
    store.put_user(user())
    found = store.get_user("ada")
    assert found is not None and found.tokens == ()
    assert store.user_for_token_hash(digest("s")) is None


def test_a_token_for_a_missing_user_is_refused_and_not_kept(store: Store) -> None:
    with pytest.raises(InvalidArgument, match="no user named 'ghost'"):
        store.put_token("ghost", "ci", digest("s"))
    assert store.user_for_token_hash(digest("s")) is None
    assert store.users() == []


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (User("", "viewer", "h"), "user name must be a non-empty string"),
        (User("ada", "root", "h"), "unknown role 'root'"),
        (User("ada", "viewer", ""), "password hash must be a non-empty string"),
        (User("ada", "viewer", "h", created_at=float("nan")), "created_at"),
    ],
)
def test_a_bad_user_is_refused_and_nothing_is_written(
    store: Store, bad: User, message: str
) -> None:
    with pytest.raises(InvalidArgument, match=message):
        store.put_user(bad)
    assert store.users() == []


def test_bad_token_arguments_are_refused(store: Store) -> None:
    store.put_user(user())
    for bad in ("", "ABC", digest("s").upper(), digest("s")[:-1]):
        with pytest.raises(InvalidArgument, match="SHA-256"):
            store.put_token("ada", "ci", bad)
        with pytest.raises(InvalidArgument, match="SHA-256"):
            store.user_for_token_hash(bad)
    with pytest.raises(InvalidArgument, match="token label"):
        store.put_token("ada", "", digest("s"))
    with pytest.raises(InvalidArgument, match="user name"):
        store.get_user("")
    found = store.get_user("ada")
    assert found is not None and found.tokens == ()
