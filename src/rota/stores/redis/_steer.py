"""Operator actions, flow-control settings and schedules of the Redis store."""

from __future__ import annotations

from collections.abc import Sequence

from rota.models import EnqueueResult, NewJob, Schedule
from rota.stores import _checks
from rota.stores.base import FireResult, check_mode, report_progress
from rota.stores.redis import _codec
from rota.stores.redis._base import RedisBase, guarded

# Jobs per script call in the verbs that may touch very many: a script runs
# alone on the server, so each call is kept to a few milliseconds.
_CHUNK = 1_000


class Steering(RedisBase):
    """Cancel, retry, delete, queue modes, purge; limits; schedules."""

    @guarded
    def cancel(self, job_ids: Sequence[str], by: str | None = None) -> list[bool]:
        _checks.job_ids(job_ids)
        _checks.optional_text(by, "by")
        if not job_ids:
            return []
        return [bool(x) for x in self._run("cancel", [by or "", *job_ids])]

    @guarded
    def retry(self, job_ids: Sequence[str], by: str | None = None) -> list[bool]:
        _checks.job_ids(job_ids)
        _checks.optional_text(by, "by")
        if not job_ids:
            return []
        return [bool(x) for x in self._run("retry", [by or "", *job_ids])]

    @guarded
    def retry_failed(
        self, queue: str | None = None, task: str | None = None, by: str | None = None
    ) -> int:
        _checks.optional_text(queue, "queue")
        _checks.optional_text(task, "task")
        _checks.optional_text(by, "by")
        # The first chunk fixes the set of jobs (sent and failed before it);
        # each chunk goes on after the last sequence looked at, so a job
        # retried in one chunk that fails again is not seen by the next.
        total, after, seq_bound, time_bound = 0, "", "", ""
        while True:
            done, looked, last, seq, until = self._run(
                "retry_failed",
                [queue or "", task or "", str(_CHUNK), after, by or "", seq_bound, time_bound],
            )
            total += int(done)
            report_progress(int(done))
            after, seq_bound, time_bound = last.decode(), seq.decode(), until.decode()
            if int(looked) < _CHUNK:
                return total

    @guarded
    def delete(self, job_ids: Sequence[str]) -> list[bool]:
        _checks.job_ids(job_ids)
        if not job_ids:
            return []
        return [bool(x) for x in self._run("delete", list(job_ids))]

    @guarded
    def set_queue_mode(self, queue: str, mode: str) -> None:
        check_mode(queue, mode)
        self._run("set_queue_mode", [queue, mode])

    def pause_queue(self, queue: str) -> None:
        self.set_queue_mode(queue, "paused")

    def resume_queue(self, queue: str) -> None:
        self.set_queue_mode(queue, "running")

    @guarded
    def purge_queue(self, queue: str) -> int:
        """Delete the queue's pending jobs in chunks. Jobs sent after the call
        began are kept (the first chunk fixes a sequence bound)."""
        _checks.text(queue, "queue")
        total, bound = 0, ""
        while True:
            removed, seq, more = self._run("purge_queue", [queue, bound, str(_CHUNK)])
            total += int(removed)
            report_progress(int(removed))
            bound = seq.decode()
            if not int(more):
                return total

    @guarded
    def purge_finished(self, older_than: float, limit: int = 10_000) -> int:
        _checks.retention(older_than, limit)
        total = 0
        while total < limit:
            chunk = min(_CHUNK, limit - total)
            removed = int(self._run("purge_finished", [repr(float(older_than)), str(chunk)]))
            total += removed
            if removed < chunk:
                break
        return total

    @guarded
    def set_limit(self, key: str, concurrency: int | None) -> bool:
        _checks.concurrency_override(key, concurrency)
        value = "" if concurrency is None else str(int(concurrency))
        return bool(self._run("set_limit", [key, value]))

    @guarded
    def set_rate(self, key: str, rate: float | None) -> bool:
        _checks.rate_override(key, rate)
        return bool(self._run("set_rate", [key, "" if rate is None else repr(float(rate))]))

    @guarded
    def reset_breaker(self, key: str) -> bool:
        _checks.text(key, "limit key")
        return bool(self._run("reset_breaker", [key]))

    # -- schedules ---------------------------------------------------------

    @guarded
    def upsert_schedule(self, schedule: Schedule) -> None:
        _checks.schedule(schedule)
        self._run("upsert_schedule", _codec.schedule_args(schedule))

    @guarded
    def schedules(self) -> list[Schedule]:
        names = sorted(_codec.text(m) for m in self._client.smembers(self.keys.static("schedules")))
        if not names:
            return []
        pipe = self._client.pipeline(transaction=False)
        for name in names:
            pipe.hgetall(self.keys.schedule(name))
        return [_codec.schedule_from_hash(h) for h in pipe.execute() if h]

    @guarded
    def get_schedule(self, name: str) -> Schedule | None:
        _checks.text(name, "schedule name")
        found: dict[bytes, bytes] = self._client.hgetall(self.keys.schedule(name))  # type: ignore[assignment]
        return _codec.schedule_from_hash(found) if found else None

    @guarded
    def remove_schedule(self, name: str) -> bool:
        _checks.text(name, "schedule name")
        return bool(self._run("remove_schedule", [name]))

    @guarded
    def set_schedule_enabled(self, name: str, enabled: bool) -> bool:
        _checks.text(name, "schedule name")
        _checks.flag(enabled, "enabled")
        return bool(self._run("set_schedule_enabled", [name, "1" if enabled else "0"]))

    @guarded
    def fire_schedule(
        self, name: str, expected_next: float, new_next: float | None, job: NewJob | None
    ) -> FireResult:
        _checks.fire(name, expected_next, new_next, job)
        args: list[bytes | str] = [
            self._request_id(),
            name,
            repr(float(expected_next)),
            _codec.opt(None if new_next is None else float(new_next)),
            "0" if job is None else "1",
        ]
        if job is not None:
            args += _codec.new_job_args(job)
        outcome: bytes = self._run("fire_schedule", args)
        result = outcome.decode()
        assert result in ("fired", "skipped", "dropped", "conflict")
        return result  # type: ignore[return-value]

    @guarded
    def run_schedule(self, name: str, job: NewJob) -> EnqueueResult | None:
        _checks.text(name, "schedule name")
        _checks.new_job(job)
        args = [self._request_id(), name, *_codec.new_job_args(job)]
        reply = self._run("run_schedule", args)
        if not reply:
            return None
        return EnqueueResult(reply[0].decode(), duplicate=reply[1] == b"1")

    @guarded
    def schedule_changed_since(self, version: int) -> int:
        return int(self._client.get(self.keys.static("schedver")) or 0)
