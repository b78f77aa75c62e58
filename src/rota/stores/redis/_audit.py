"""The audit log of the Redis store.

Entries live in ``P auditlog`` (id -> JSON) and are ordered by ``P audit``
(id -> time). Ids are ``SEQ`` numbers from ``P seq``, zero-padded, so entries
of the same time order by insertion; each write and each purge is one
MULTI/EXEC transaction.
"""

from __future__ import annotations

from typing import Any

from rota import _json
from rota.models import AuditEntry
from rota.stores import _checks
from rota.stores.base import check_audit_entry, check_audit_query
from rota.stores.redis._base import RedisBase, guarded

_SCAN = 500  # entries read per round trip while filtering a page


class Audit(RedisBase):
    """``append_audit``, ``audit`` and ``purge_audit``."""

    def append_audit(self, entry: AuditEntry) -> None:
        e = check_audit_entry(entry)
        at = float(e.at) or self.now()
        seq = self._reconnect.call(lambda: self._client.incr(self.keys.static("seq")))
        entry_id = f"{int(seq):016d}"
        record = {
            "at": at,
            "actor": e.actor,
            "role": e.role,
            "origin": e.origin,
            "address": e.address,
            "action": e.action,
            "target": e.target,
            "details": e.details,
        }
        data = _json.dumps(record)

        def write() -> None:  # idempotent: a repeat after a lost reply writes the same
            pipe = self._client.pipeline(transaction=True)
            pipe.hset(self.keys.static("auditlog"), entry_id, data)
            pipe.zadd(self.keys.static("audit"), {entry_id: at})
            pipe.execute()

        self._reconnect.call(write)

    @guarded
    def audit(
        self,
        limit: int = 100,
        cursor: str | None = None,
        actor: str | None = None,
        action: str | None = None,
    ) -> tuple[list[AuditEntry], str | None]:
        after = check_audit_query(limit, cursor, actor, action)
        found: list[tuple[str, AuditEntry]] = []
        top: float | str = "+inf" if after is None else after[0]
        skip = 0
        while len(found) <= limit:
            ids: list[Any] = self._client.zrevrangebyscore(
                self.keys.static("audit"), top, "-inf", start=skip, num=_SCAN, withscores=True
            )
            if not ids:
                break
            skip += len(ids)
            picked = [
                (m.decode(), score)
                for m, score in ids
                if after is None or score < after[0] or m.decode() < after[1]
            ]
            raws: list[Any] = self._client.hmget(
                self.keys.static("auditlog"), [m for m, _ in picked]
            )
            for (entry_id, _), raw in zip(picked, raws, strict=True):
                entry = _entry(raw)
                if entry is None or (actor is not None and entry.actor != actor):
                    continue
                if action is None or entry.action == action:
                    found.append((entry_id, entry))
            if len(ids) < _SCAN:
                break
        if len(found) <= limit:
            return [e for _, e in found], None
        last_id, last = found[limit - 1]
        return [e for _, e in found[:limit]], f"{last.at!r}:{last_id}"

    @guarded
    def purge_audit(self, older_than: float) -> int:
        _checks.retention(older_than, 1)
        cutoff = self.now() - older_than
        ids = self._client.zrangebyscore(self.keys.static("audit"), "-inf", f"({cutoff!r}")
        if not ids:
            return 0
        pipe = self._client.pipeline(transaction=True)
        pipe.zrem(self.keys.static("audit"), *ids)
        pipe.hdel(self.keys.static("auditlog"), *ids)
        removed, _ = pipe.execute()
        return int(removed)


def _entry(raw: bytes | None) -> AuditEntry | None:
    """An entry from its stored JSON; None for one gone or not written by rota."""
    try:
        data: Any = _json.loads(raw)
        return AuditEntry(
            at=float(data["at"]),
            actor=str(data["actor"]),
            role=str(data["role"]),
            origin=str(data["origin"]),
            address=None if data["address"] is None else str(data["address"]),
            action=str(data["action"]),
            target=str(data["target"]),
            details=dict(data["details"]),
        )
    except Exception:
        return None
