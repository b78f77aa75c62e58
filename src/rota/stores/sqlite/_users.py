"""Users and their API tokens in the SQLite store."""

from __future__ import annotations

import sqlite3
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from rota.models import User
from rota.stores import _checks, _users
from rota.stores.sqlite._conn import Connections
from rota.stores.sqlite._sql import queries

Q = queries("users.sql")


def _user(row: Sequence[Any], tokens: Sequence[str]) -> User:
    return User(row[0], row[1], row[2], row[3], tuple(tokens))


def _read(conn: sqlite3.Connection, name: str) -> User | None:
    row = conn.execute(Q["get_user"], (name,)).fetchone()
    if row is None:
        return None
    labels = [label for (label,) in conn.execute(Q["user_token_labels"], (name,))]
    return _user(row, labels)


class Users(Connections):
    """The users verbs of the store protocol."""

    def put_user(self, user: User) -> None:
        _users.user(user)
        created = user.created_at or time.time()
        with self._write() as conn:
            conn.execute(Q["upsert_user"], (user.name, user.role, user.password_hash, created))

    def get_user(self, name: str) -> User | None:
        _checks.text(name, "user name")
        with self._write("BEGIN") as conn:
            return _read(conn, name)

    def users(self) -> list[User]:
        with self._write("BEGIN") as conn:
            rows = conn.execute(Q["all_users"]).fetchall()
            labels: dict[str, list[str]] = defaultdict(list)
            for name, label in conn.execute(Q["all_token_labels"]):
                labels[name].append(label)
        return [_user(row, labels[row[0]]) for row in rows]

    def delete_user(self, name: str) -> bool:
        _checks.text(name, "user name")
        with self._write() as conn:
            conn.execute(Q["delete_user_tokens"], (name,))
            return conn.execute(Q["delete_user"], (name,)).rowcount > 0

    def put_token(self, name: str, label: str, token_hash: str) -> None:
        _users.token(name, label, token_hash)
        with self._write() as conn:
            if conn.execute(Q["get_user"], (name,)).fetchone() is None:
                raise _users.no_user(name)
            conn.execute(Q["delete_token"], (name, label))
            conn.execute(Q["put_token"], (token_hash, name, label))

    def delete_token(self, name: str, label: str) -> bool:
        _checks.text(name, "user name")
        _checks.text(label, "token label")
        with self._write() as conn:
            return conn.execute(Q["delete_token"], (name, label)).rowcount > 0

    def user_for_token_hash(self, token_hash: str) -> User | None:
        _users.token_hash(token_hash)
        with self._write("BEGIN") as conn:
            row = conn.execute(Q["token_owner"], (token_hash,)).fetchone()
            return None if row is None else _read(conn, row[0])
