"""The audit log of the SQL engine: one row per operator action."""

from __future__ import annotations

from typing import Any

from rota import _json
from rota.models import AuditEntry
from rota.stores import _checks
from rota.stores.base import check_audit_entry, check_audit_query
from rota.stores.sql.tx import Database, Tx


class Audit(Database):
    """``append_audit``, ``audit`` and ``purge_audit``."""

    def append_audit(self, entry: AuditEntry) -> None:
        e = check_audit_entry(entry)
        details = _json.dumps(e.details).decode()
        row = (e.actor, e.role, e.origin, e.address, e.action, e.target, details)

        def work(tx: Tx) -> None:
            tx.execute("append_audit", (e.at or tx.now(), *row))

        self._transact(work)

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
        with self._read() as tx:
            rows = tx.execute("audit_page", params).fetchall()
        entries = [
            AuditEntry(r[1], r[2], r[3], r[4], r[5], r[6], r[7], _details(r[8])) for r in rows
        ]
        if len(rows) <= limit:
            return entries, None
        last = rows[limit - 1]
        return entries[:limit], f"{last[1]!r}:{last[0]}"

    def purge_audit(self, older_than: float) -> int:
        _checks.retention(older_than, 1)
        return self._transact(
            lambda tx: int(tx.execute("purge_audit", (tx.now() - older_than,)).rowcount)
        )


def _details(raw: str | bytes | None) -> dict[str, Any]:
    """Stored details as a dict; anything else (written by hand) as empty."""
    try:
        value = _json.loads(raw)
    except Exception:
        return {}
    return value if isinstance(value, dict) else {}
