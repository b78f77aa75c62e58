"""User accounts and API tokens: the rules behind the users section of ``app.admin``.

Passwords are hashed with Argon2id (argon2-cffi, part of the ``web`` extra)
and never kept or logged in clear. An API token is a random secret shown
once when it is made; the store keeps only its SHA-256 hash, so a copy of the
store does not hold working credentials.

A dashboard session of a user is a token of theirs too, labelled
``dashboard-session-TIME-ID``, whose secret the session's cookie holds: its
hash is kept apart from API tokens' (so the secret is no bearer token), and
ending the session deletes it.
"""

from __future__ import annotations

import calendar
import hashlib
import re
import secrets
import time
from dataclasses import replace
from functools import cache
from typing import TYPE_CHECKING

from rota.errors import Conflict, InvalidArgument, NotFound
from rota.models import USER_ROLES, User

if TYPE_CHECKING:
    from argon2 import PasswordHasher

    from rota.stores.base import Store

__all__ = [
    "MIN_PASSWORD",
    "SESSION_LABEL",
    "SESSION_MAX_AGE",
    "add_user",
    "authenticate",
    "create_token",
    "end_session",
    "hash_password",
    "hash_token",
    "remove_user",
    "revoke_token",
    "set_password",
    "set_role",
    "start_session",
    "user_for_session",
    "user_for_token",
]

#: How long a dashboard session lasts (its cookie's age, and its token's).
SESSION_MAX_AGE = 12 * 3600
#: The label of a session's token starts with this, then its start (UTC).
SESSION_LABEL = "dashboard-session-"
_SESSION_TIME = "%Y%m%dT%H%M%SZ"

#: The shortest password accepted.
MIN_PASSWORD = 8
_MAX_PASSWORD = 1024
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")


@cache
def _hasher() -> PasswordHasher:
    try:
        from argon2 import PasswordHasher
    except ImportError:  # pragma: no cover - depends on the installed extras
        raise InvalidArgument("user accounts need argon2-cffi: pip install 'rota[web]'") from None
    return PasswordHasher()


@cache
def _decoy() -> str:
    """A hash to verify against when the user does not exist (same time either way)."""
    return _hasher().hash(secrets.token_urlsafe(16))


def check_name(value: object, what: str = "user name") -> str:
    """A user name or token label: 1 to 64 letters, digits, ``. _ @ -``,
    starting with a letter or digit."""
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        shown = repr(value)[:70]
        raise InvalidArgument(
            f"{what} must be 1 to 64 letters, digits or '._@-', starting with a letter "
            f"or digit, not {shown}"
        )
    return value


def check_role(value: object) -> str:
    """One of :data:`rota.models.USER_ROLES`."""
    if value not in USER_ROLES:
        raise InvalidArgument(f"role must be one of {', '.join(USER_ROLES)}, not {value!r}")
    assert isinstance(value, str)
    return value


def hash_password(password: object) -> str:
    """The Argon2id hash of an acceptable password (InvalidArgument otherwise)."""
    if not isinstance(password, str):
        raise InvalidArgument(f"password must be a string, not {type(password).__name__}")
    if not MIN_PASSWORD <= len(password) <= _MAX_PASSWORD:
        raise InvalidArgument(f"password must be {MIN_PASSWORD} to {_MAX_PASSWORD} characters long")
    return _hasher().hash(password)


def hash_token(secret: str) -> str:
    """How the store keys an API token: the SHA-256 of its secret, in hex."""
    return hashlib.sha256(secret.encode()).hexdigest()


def _existing(store: Store, name: object) -> User:
    user = store.get_user(check_name(name))
    if user is None:
        raise NotFound(f"no user named {name!r}")
    return user


def add_user(store: Store, name: object, role: object, password: object) -> User:
    """Create a user; :class:`Conflict` if the name is taken."""
    user = User(check_name(name), check_role(role), "")
    if store.get_user(user.name) is not None:
        raise Conflict(f"a user named {user.name!r} exists already")
    store.put_user(replace(user, password_hash=hash_password(password)))
    return user


def remove_user(store: Store, name: object) -> None:
    """Remove a user and revoke its tokens; :class:`NotFound` if there is none."""
    if not store.delete_user(check_name(name)):
        raise NotFound(f"no user named {name!r}")


def set_role(store: Store, name: object, role: object) -> str:
    """Change a user's role; returns the role it had."""
    user = _existing(store, name)
    store.put_user(replace(user, role=check_role(role)))
    return user.role


def set_password(store: Store, name: object, password: object) -> None:
    """Change a user's password."""
    user = _existing(store, name)
    store.put_user(replace(user, password_hash=hash_password(password)))


def create_token(store: Store, name: object, label: object) -> str:
    """A new API token for a user, replacing its token of the same label; the
    secret is returned here and never again."""
    user = _existing(store, name)
    secret = secrets.token_urlsafe(32)
    store.put_token(user.name, check_name(label, "token label"), hash_token(secret))
    return secret


def revoke_token(store: Store, name: object, label: object) -> None:
    """Revoke a user's token; :class:`NotFound` if it has no token of that label."""
    user = _existing(store, name)
    if not store.delete_token(user.name, check_name(label, "token label")):
        raise NotFound(f"user {user.name!r} has no token labelled {label!r}")


def authenticate(store: Store, name: object, password: object) -> User | None:
    """The user if ``password`` is theirs, else None (also for a malformed or
    unknown name: a guess learns nothing, and takes as long, either way)."""
    from argon2.exceptions import InvalidHashError, VerificationError

    valid = isinstance(name, str) and _NAME.fullmatch(name) is not None
    user = store.get_user(name) if valid and isinstance(name, str) else None
    if not isinstance(password, str) or len(password) > _MAX_PASSWORD:
        return None
    try:
        _hasher().verify(user.password_hash if user else _decoy(), password)
    except (VerificationError, InvalidHashError):
        return None
    return user


def user_for_token(store: Store, secret: object) -> User | None:
    """The user holding the API token ``secret``, or None."""
    if not isinstance(secret, str) or not secret or len(secret) > 512:
        return None
    return store.user_for_token_hash(hash_token(secret))


def start_session(store: Store, name: object) -> tuple[User, str, str]:
    """A new dashboard session of user ``name``: the user, the session's
    secret and its token's label. The user's sessions past
    :data:`SESSION_MAX_AGE` (never ended) are deleted."""
    user = _existing(store, name)
    secret = secrets.token_urlsafe(32)
    digest = _session_hash(secret)
    label = f"{SESSION_LABEL}{time.strftime(_SESSION_TIME, time.gmtime())}-{digest[:8]}"
    store.put_token(user.name, label, digest)
    oldest = time.time() - SESSION_MAX_AGE
    for old in user.tokens:
        started = _session_start(old)
        if started is not None and started < oldest:
            store.delete_token(user.name, old)
    return user, secret, label


def end_session(store: Store, name: object, label: object) -> None:
    """End user ``name``'s session ``label`` (nothing if it has ended)."""
    if isinstance(label, str) and label.startswith(SESSION_LABEL):
        store.delete_token(check_name(name), label)


def user_for_session(store: Store, secret: object) -> User | None:
    """The user whose live session has ``secret``, or None."""
    if not isinstance(secret, str) or not secret or len(secret) > 512:
        return None
    return store.user_for_token_hash(_session_hash(secret))


def _session_hash(secret: str) -> str:
    """A session secret's hash: apart from an API token's (a plain SHA-256)."""
    return hashlib.sha256(b"rota dashboard session\0" + secret.encode()).hexdigest()


def _session_start(label: str) -> float | None:
    """When the session of token ``label`` started; None for an API token."""
    if not label.startswith(SESSION_LABEL):
        return None
    stamp = label[len(SESSION_LABEL) :].partition("-")[0]
    try:
        return float(calendar.timegm(time.strptime(stamp, _SESSION_TIME)))
    except ValueError:
        return None
