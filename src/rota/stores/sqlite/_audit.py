"""The audit log of the SQLite store: one row per operator action."""

from __future__ import annotations

import time
from typing import Any

from rota import _json
from rota.models import AuditEntry
from rota.stores import _checks
from rota.stores.base import check_audit_entry, check_audit_query
from rota.stores.sqlite._conn import Connections
from rota.stores.sqlite._sql import queries

Q = queries("audit.sql")


class Audit(Connections):
    """``append_audit``, ``audit`` and ``purge_audit``."""

    def append_audit(self, entry: AuditEntry) -> None:
        e = check_audit_entry(entry)
        details = _json.dumps(e.details).decode()
        row = (e.at or time.time(), e.actor, e.role, e.origin, e.address, e.action, e.target)
        with self._write() as conn:
            conn.execute(Q["append_audit"], (*row, details))

    def audit(
        self,
        limit: int = 100,
        cursor: str | None = None,
        actor: str | None = None,
        action: str | None = None,
    ) -> tuple[list[AuditEntry], str | None]:
        after = check_audit_query(limit, cursor, actor, action)
        params = {
            "at": None if after is None else after[0],
            "seq": None if after is None else int(after[1]),
            "actor": actor,
            "action": action,
            "limit": limit + 1,
        }
        rows = self._conn().execute(Q["audit_page"], params).fetchall()
        entries = [
            AuditEntry(r[1], r[2], r[3], r[4], r[5], r[6], r[7], _details(r[8])) for r in rows
        ]
        if len(rows) <= limit:
            return entries, None
        last = rows[limit - 1]
        return entries[:limit], f"{last[1]!r}:{last[0]}"

    def purge_audit(self, older_than: float) -> int:
        _checks.retention(older_than, 1)
        with self._write() as conn:
            return conn.execute(Q["purge_audit"], (time.time() - older_than,)).rowcount


def _details(raw: str | bytes | None) -> dict[str, Any]:
    """Stored details as a dict; anything else (written by hand) as empty."""
    try:
        value = _json.loads(raw)
    except Exception:
        return {}
    return value if isinstance(value, dict) else {}
