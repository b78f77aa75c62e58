"""Users and their API tokens in the Redis store (key schema in :mod:`keys`)."""

from __future__ import annotations

import orjson

from rota.models import User
from rota.stores import _checks, _users
from rota.stores.redis import _codec
from rota.stores.redis._base import RedisBase, guarded


def _user(name: str, record: bytes | str, labels: list[bytes]) -> User:
    role, password_hash, created = orjson.loads(record)
    tokens = tuple(sorted(_codec.text(label) for label in labels))
    return User(name, role, password_hash, float(created), tokens)


class Users(RedisBase):
    """The users verbs of the store protocol."""

    @guarded
    def put_user(self, user: User) -> None:
        _users.user(user)
        created = user.created_at or self.now()
        self._run("put_user", [user.name, user.role, user.password_hash, repr(float(created))])

    @guarded
    def get_user(self, name: str) -> User | None:
        _checks.text(name, "user name")
        pipe = self._client.pipeline(transaction=True)
        pipe.hget(self.keys.static("users"), name)
        pipe.hkeys(self.keys.usertokens(name))
        record, labels = pipe.execute()
        return None if record is None else _user(name, record, labels)

    @guarded
    def users(self) -> list[User]:
        found = self._client.hgetall(self.keys.static("users"))
        records = {_codec.text(name): record for name, record in found.items()}
        names = sorted(records)
        pipe = self._client.pipeline(transaction=True)
        for name in names:
            pipe.hkeys(self.keys.usertokens(name))
        labels = pipe.execute() if names else []
        return [
            _user(name, records[name], tokens) for name, tokens in zip(names, labels, strict=True)
        ]

    @guarded
    def delete_user(self, name: str) -> bool:
        _checks.text(name, "user name")
        return bool(self._run("delete_user", [name], [self.keys.usertokens(name)]))

    @guarded
    def put_token(self, name: str, label: str, token_hash: str) -> None:
        _users.token(name, label, token_hash)
        if not self._run("put_token", [name, label, token_hash], [self.keys.usertokens(name)]):
            raise _users.no_user(name)

    @guarded
    def delete_token(self, name: str, label: str) -> bool:
        _checks.text(name, "user name")
        _checks.text(label, "token label")
        return bool(self._run("delete_token", [name, label], [self.keys.usertokens(name)]))

    @guarded
    def user_for_token_hash(self, token_hash: str) -> User | None:
        _users.token_hash(token_hash)
        found = self._client.hget(self.keys.static("tokens"), token_hash)
        if found is None:
            return None
        name = orjson.loads(found)[0]
        # One snapshot of the user, its tokens and this token (revoked meanwhile: None).
        pipe = self._client.pipeline(transaction=True)
        pipe.hget(self.keys.static("users"), name)
        pipe.hkeys(self.keys.usertokens(name))
        pipe.hget(self.keys.static("tokens"), token_hash)
        record, labels, still = pipe.execute()
        if record is None or still is None or orjson.loads(still)[0] != name:
            return None
        return _user(name, record, labels)
