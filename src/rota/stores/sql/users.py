"""Users and their API tokens in the SQL engine."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from rota.models import User
from rota.stores import _checks, _users
from rota.stores.sql.tx import Database, Tx


def _user(row: Sequence[Any], tokens: Sequence[str]) -> User:
    return User(row[0], row[1], row[2], row[3], tuple(tokens))


def _read(tx: Tx, name: str) -> User | None:
    row = tx.execute("get_user", (name,)).fetchone()
    if row is None:
        return None
    labels = [label for (label,) in tx.execute("user_token_labels", (name,))]
    return _user(row, labels)


class Users(Database):
    """The users verbs of the store protocol."""

    def put_user(self, user: User) -> None:
        _users.user(user)

        def work(tx: Tx) -> None:
            created = user.created_at or tx.now()
            tx.execute("upsert_user", (user.name, user.role, user.password_hash, created))

        self._transact(work)

    def get_user(self, name: str) -> User | None:
        _checks.text(name, "user name")
        with self._read() as tx:
            return _read(tx, name)

    def users(self) -> list[User]:
        with self._read() as tx:
            rows = tx.execute("all_users").fetchall()
            labels: dict[str, list[str]] = defaultdict(list)
            for name, label in tx.execute("all_token_labels"):
                labels[name].append(label)
        return [_user(row, labels[row[0]]) for row in rows]

    def delete_user(self, name: str) -> bool:
        _checks.text(name, "user name")

        def work(tx: Tx) -> bool:
            tx.execute("delete_user_tokens", (name,))
            return bool(tx.execute("delete_user", (name,)).rowcount > 0)

        return self._transact(work)

    def put_token(self, name: str, label: str, token_hash: str) -> None:
        _users.token(name, label, token_hash)

        def work(tx: Tx) -> None:
            if tx.execute("get_user", (name,)).fetchone() is None:
                raise _users.no_user(name)
            tx.execute("delete_token", (name, label))
            tx.execute("put_token", (token_hash, name, label))

        self._transact(work)

    def delete_token(self, name: str, label: str) -> bool:
        _checks.text(name, "user name")
        _checks.text(label, "token label")
        return self._transact(
            lambda tx: bool(tx.execute("delete_token", (name, label)).rowcount > 0)
        )

    def user_for_token_hash(self, token_hash: str) -> User | None:
        _users.token_hash(token_hash)
        with self._read() as tx:
            row = tx.execute("token_owner", (token_hash,)).fetchone()
            return None if row is None else _read(tx, row[0])
