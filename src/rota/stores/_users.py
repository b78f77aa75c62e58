"""What every store checks before it writes a user or a token."""

from __future__ import annotations

import re

from rota.errors import InvalidArgument
from rota.models import USER_ROLES, User
from rota.stores import _checks

_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


def user(value: object) -> None:
    """A :class:`User` with a name, a known role and a password hash."""
    if not isinstance(value, User):
        raise InvalidArgument(f"expected a User, not {type(value).__name__}")
    _checks.text(value.name, "user name")
    _checks.text(value.password_hash, "password hash")
    if value.role not in USER_ROLES:
        raise InvalidArgument(
            f"unknown role {value.role!r}; expected one of: {', '.join(USER_ROLES)}"
        )
    _checks.moment(value.created_at, "created_at")


def token_hash(value: object) -> None:
    """A SHA-256 digest in lower-case hex."""
    if not isinstance(value, str) or not _SHA256_HEX.fullmatch(value):
        raise InvalidArgument("token hash must be a SHA-256 digest in lower-case hex")


def token(name: object, label: object, digest: object) -> None:
    """The arguments of :meth:`Store.put_token`."""
    _checks.text(name, "user name")
    _checks.text(label, "token label")
    token_hash(digest)


def no_user(name: str) -> InvalidArgument:
    """The error for a token given to a user that does not exist."""
    return InvalidArgument(f"no user named {name!r}")
