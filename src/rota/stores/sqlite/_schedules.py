"""Schedules in the SQLite store: upsert, list, look up, and the atomic fire."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from rota import _json
from rota.models import EnqueueResult, NewJob, Schedule
from rota.stores import _checks
from rota.stores.base import FireResult
from rota.stores.sqlite import _notify
from rota.stores.sqlite._conn import Connections
from rota.stores.sqlite._sql import queries

Q = queries()

_COLUMNS = (
    "name, task, trigger, payload, next_fire, enabled, misfire, grace, overlap, jitter,"
    " job_options, last_fire, last_job_id, skipped"
)


def _schedule(row: Sequence[Any]) -> Schedule:
    return Schedule(
        name=row[0],
        task=row[1],
        trigger=_json.loads(row[2]),
        payload=row[3],
        next_fire=row[4],
        enabled=bool(row[5]),
        misfire=row[6],
        grace=row[7],
        overlap=row[8],
        jitter=row[9],
        job_options=_json.loads(row[10]),
        last_fire=row[11],
        last_job_id=row[12],
        skipped=row[13],
    )


class Schedules(Connections):
    """The schedule verbs of the store protocol."""

    def _enqueue(
        self, conn: sqlite3.Connection, jobs: Sequence[NewJob], now: float
    ) -> list[EnqueueResult]:
        raise NotImplementedError  # provided by SQLiteStore

    @staticmethod
    def _bump(conn: sqlite3.Connection) -> None:
        conn.execute("UPDATE meta SET value = value + 1 WHERE key = 'schedules_version'")

    def upsert_schedule(self, schedule: Schedule) -> None:
        _checks.schedule(schedule)
        trigger = _json.dumps(schedule.trigger)
        with self._write() as conn:
            old = conn.execute(
                "SELECT trigger FROM schedules WHERE name = ?", (schedule.name,)
            ).fetchone()
            values = (
                schedule.task,
                schedule.payload,
                schedule.misfire,
                schedule.grace,
                schedule.overlap,
                schedule.jitter,
                _json.dumps(schedule.job_options),
            )
            if old is None:
                conn.execute(
                    f"INSERT INTO schedules ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        schedule.name,
                        schedule.task,
                        trigger,
                        schedule.payload,
                        schedule.next_fire,
                        int(schedule.enabled),
                        schedule.misfire,
                        schedule.grace,
                        schedule.overlap,
                        schedule.jitter,
                        _json.dumps(schedule.job_options),
                        None,
                        None,
                        0,
                    ),
                )
            elif bytes(old[0]) != trigger:
                conn.execute(
                    "UPDATE schedules SET task = ?, payload = ?, misfire = ?, grace = ?,"
                    " overlap = ?, jitter = ?, job_options = ?, trigger = ?, next_fire = ?"
                    " WHERE name = ?",
                    (*values, trigger, schedule.next_fire, schedule.name),
                )
            else:
                conn.execute(
                    "UPDATE schedules SET task = ?, payload = ?, misfire = ?, grace = ?,"
                    " overlap = ?, jitter = ?, job_options = ? WHERE name = ?",
                    (*values, schedule.name),
                )
            self._bump(conn)

    def schedules(self) -> list[Schedule]:
        rows = self._conn().execute(f"SELECT {_COLUMNS} FROM schedules ORDER BY name")
        return [_schedule(row) for row in rows]

    def get_schedule(self, name: str) -> Schedule | None:
        _checks.text(name, "schedule name")
        row = self._conn().execute(Q["get_schedule"], (name,)).fetchone()
        return None if row is None else _schedule(row)

    def remove_schedule(self, name: str) -> bool:
        _checks.text(name, "schedule name")
        with self._write() as conn:
            removed = conn.execute("DELETE FROM schedules WHERE name = ?", (name,)).rowcount
            self._bump(conn)
        return removed == 1

    def set_schedule_enabled(self, name: str, enabled: bool) -> bool:
        _checks.text(name, "schedule name")
        _checks.flag(enabled, "enabled")
        with self._write() as conn:
            changed = conn.execute(
                "UPDATE schedules SET enabled = ? WHERE name = ?", (int(enabled), name)
            ).rowcount
            self._bump(conn)
        return changed == 1

    def fire_schedule(
        self, name: str, expected_next: float, new_next: float | None, job: NewJob | None
    ) -> FireResult:
        now = time.time()
        _checks.fire(name, expected_next, new_next, job)
        with self._write() as conn:
            row = conn.execute(
                "SELECT next_fire, overlap, last_job_id, enabled FROM schedules WHERE name = ?",
                (name,),
            ).fetchone()
            if row is None or row[0] != expected_next or not row[3]:
                return "conflict"
            _, overlap, last_job_id, _ = row
            conn.execute(
                "UPDATE schedules SET next_fire = ?, last_fire = ? WHERE name = ?",
                (new_next, expected_next, name),
            )
            if job is None:
                return "dropped"
            if self._overlaps(conn, overlap, last_job_id):
                conn.execute("UPDATE schedules SET skipped = skipped + 1 WHERE name = ?", (name,))
                return "skipped"
            result = self._enqueue(conn, [job], now)[0]
            conn.execute("UPDATE schedules SET last_job_id = ? WHERE name = ?", (result.id, name))
        _notify.notify(self.path)
        return "fired"

    @staticmethod
    def _overlaps(conn: sqlite3.Connection, overlap: str, last_job_id: str | None) -> bool:
        if overlap == "allow" or last_job_id is None:
            return False
        row = conn.execute("SELECT state FROM jobs WHERE id = ?", (last_job_id,)).fetchone()
        state = row[0] if row else None
        if overlap == "skip":
            return state in ("scheduled", "queued", "parked", "running")
        return state in (
            "scheduled",
            "queued",
            "parked",
        )  # "queue": one may wait behind the running one

    def schedule_changed_since(self, version: int) -> int:
        row = (
            self._conn()
            .execute("SELECT value FROM meta WHERE key = 'schedules_version'")
            .fetchone()
        )
        return int(row[0])
