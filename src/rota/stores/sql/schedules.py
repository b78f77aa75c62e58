"""Schedules in the SQL engine: upsert, list, look up, and the atomic fire."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from rota import _json
from rota.errors import RotaError
from rota.models import EnqueueResult, NewJob, Schedule
from rota.stores import _checks
from rota.stores.base import FireResult
from rota.stores.sql.tx import Database, Refused, Tx

_PENDING = ("scheduled", "queued", "parked")


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


class Schedules(Database):
    """The schedule verbs of the store contract. Every change bumps the
    schedules version that schedulers watch."""

    @abstractmethod
    def _enqueue(self, tx: Tx, jobs: Sequence[NewJob]) -> list[EnqueueResult]:
        """Store ``jobs`` in ``tx`` (the job verbs provide it)."""

    @abstractmethod
    def _name_taken_id(self, ids: Sequence[str], refused: Refused) -> RotaError:
        """Why the store refused jobs ``ids`` (the job verbs provide it)."""

    def upsert_schedule(self, schedule: Schedule) -> None:
        _checks.schedule(schedule)
        trigger = _json.dumps(schedule.trigger)
        options = _json.dumps(schedule.job_options)
        values = (
            schedule.task,
            schedule.payload,
            schedule.misfire,
            schedule.grace,
            schedule.overlap,
            schedule.jitter,
            options,
        )

        def work(tx: Tx) -> None:
            tx.execute("lock_schedule", (schedule.name,))  # racing definitions: one inserts
            old = tx.execute("schedule_trigger", (schedule.name,)).fetchone()
            if old is None:
                tx.execute(
                    "insert_schedule",
                    (schedule.name, trigger, schedule.next_fire, int(schedule.enabled), *values),
                )
            elif bytes(old[0]) != trigger:  # a new trigger: its next fire time too
                tx.execute(
                    "update_schedule_trigger",
                    (*values, trigger, schedule.next_fire, schedule.name),
                )
            else:
                tx.execute("update_schedule", (*values, schedule.name))
            tx.execute("bump_schedules_version")

        self._transact(work)

    def schedules(self) -> list[Schedule]:
        with self._read() as tx:
            rows = tx.execute("all_schedules").fetchall()
        return [_schedule(row) for row in rows]

    def get_schedule(self, name: str) -> Schedule | None:
        _checks.text(name, "schedule name")
        if "\0" in name:  # (as in list_jobs)
            return None
        with self._read() as tx:
            row = tx.execute("get_schedule", (name,)).fetchone()
        return None if row is None else _schedule(row)

    def remove_schedule(self, name: str) -> bool:
        _checks.text(name, "schedule name")

        def work(tx: Tx) -> bool:
            removed = tx.execute("delete_schedule", (name,)).rowcount
            tx.execute("bump_schedules_version")
            return bool(removed == 1)

        return self._transact(work)

    def set_schedule_enabled(self, name: str, enabled: bool) -> bool:
        _checks.text(name, "schedule name")
        _checks.flag(enabled, "enabled")

        def work(tx: Tx) -> bool:
            changed = tx.execute("enable_schedule", (int(enabled), name)).rowcount
            tx.execute("bump_schedules_version")
            return bool(changed == 1)

        return self._transact(work)

    def fire_schedule(
        self, name: str, expected_next: float, new_next: float | None, job: NewJob | None
    ) -> FireResult:
        _checks.fire(name, expected_next, new_next, job)

        def work(tx: Tx) -> FireResult:
            row = tx.execute("schedule_for_fire", (name,)).fetchone()
            if row is None or row[0] != expected_next or not row[3]:
                return "conflict"
            _, overlap, last_job_id, _ = row
            tx.execute("schedule_fired", (new_next, expected_next, name))
            if job is None:
                return "dropped"
            if _overlaps(tx, overlap, last_job_id):
                tx.execute("schedule_skipped", (name,))
                return "skipped"
            result = self._enqueue(tx, [job])[0]
            tx.execute("schedule_last_job", (result.id, name))
            return "fired"

        try:
            return self._transact(work)
        except Refused as refused:  # the fire's job id is taken: InvalidArgument, named
            raise self._name_taken_id([job.id] if job else [], refused) from None

    def run_schedule(self, name: str, job: NewJob) -> EnqueueResult | None:
        _checks.text(name, "schedule name")
        _checks.new_job(job)

        def work(tx: Tx) -> EnqueueResult | None:
            if tx.execute("schedule_for_fire", (name,)).fetchone() is None:
                return None
            result = self._enqueue(tx, [job])[0]
            tx.execute("schedule_last_job", (result.id, name))
            return result

        try:
            return self._transact(work)
        except Refused as refused:  # the job's id is taken: InvalidArgument, named
            raise self._name_taken_id([job.id], refused) from None

    def schedule_changed_since(self, version: int) -> int:
        with self._read() as tx:
            row = tx.execute("schedules_version").fetchone()
        return int(row[0])


def _overlaps(tx: Tx, overlap: str, last_job_id: str | None) -> bool:
    """Whether the schedule's last job stands in the way of a new one:
    ``skip`` while it is pending or running; ``queue`` while it is pending
    (one may wait behind the running one); ``allow`` never."""
    if overlap == "allow" or last_job_id is None:
        return False
    row = tx.execute("job_state", (last_job_id,)).fetchone()
    state = row[0] if row else None
    if overlap == "skip":
        return state in (*_PENDING, "running")
    return state in _PENDING
