"""Encoding between rota's values and the strings the Lua scripts read and write.

Optional values travel as ``""`` (None). Floats travel as ``repr`` so they read
back exactly; the scripts write times with 17 significant digits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from rota import _json, _payload
from rota.models import (
    ClaimedJob,
    Job,
    JobState,
    MinuteStats,
    NewJob,
    QueueInfo,
    Schedule,
    WorkerInfo,
)

#: The fields of a claim reply per job, in order (see lua/claim.lua).
CLAIM_FIELDS = 16


def opt(value: object) -> str:
    """``""`` for None, else the value as the scripts expect it."""
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def new_job_args(job: NewJob) -> list[bytes | str]:
    """One job's fields for ``L.enqueue`` (``lua/_base.lua``), in its order."""
    limits = job.limits_field()
    return [
        job.id,
        job.task,
        job.queue,
        job.payload,
        str(int(job.priority)),
        repr(float(job.delay)),
        opt(None if job.run_at is None else float(job.run_at)),
        str(int(job.max_attempts)),
        str(int(job.max_lost)),
        repr(float(job.lease)),
        opt(None if job.timeout is None else float(job.timeout)),
        limits or "",
        job.fair_key,
        opt(job.unique_key),
        opt(None if job.unique_for is None else float(job.unique_for)),
        opt(job.schedule),
        opt(None if job.fire_time is None else float(job.fire_time)),
        opt(job.host),
        opt(job.retry),
    ]


def text(value: bytes | str) -> str:
    """A reply value as text (redis-py types replies as bytes or str)."""
    return value.decode() if isinstance(value, bytes) else value


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode(errors="replace")


def _float(value: bytes | None) -> float | None:
    return None if value is None or value == b"" else float(value)


def _lease_text(value: bytes | None) -> str | None:
    """A lease field: "" (or absent) means no lease."""
    return None if not value else value.decode()


def claimed_jobs(flat: Sequence[Any]) -> list[ClaimedJob]:
    """Claimed jobs from a claim reply: CLAIM_FIELDS values per job."""
    return [_claimed(flat[i : i + CLAIM_FIELDS]) for i in range(0, len(flat), CLAIM_FIELDS)]


def handed_jobs(entry: bytes | str) -> tuple[int, list[ClaimedJob]]:
    """An inbox entry (lua/_claim.lua, hand-off): the free slots its worker's
    idle registration has left, and the jobs claimed for it."""
    values = _json.loads(entry)
    return int(values[0]), claimed_jobs(values[1:])


def _claimed(r: Sequence[Any]) -> ClaimedJob:
    """One claimed job from its values in L.CLAIMED order: bytes from a claim
    reply (integers for Lua numbers, None for absent fields), or strings from
    an inbox entry's JSON (false for absent fields). Fields a job's hash leaves
    out at their defaults (``L.JOB_DEFAULTS`` in ``lua/_base.lua``) come back
    absent: an enqueued_at left out is the run_at."""
    (job_id, task, queue, payload, attempt, max_attempts, lost, token,
     lease, timeout, enqueued_at, run_at, schedule, fire_time, started_at, retry) = r  # fmt: skip
    return ClaimedJob(
        id=text(job_id),
        task=text(task),
        queue=text(queue),
        payload=payload.encode() if isinstance(payload, str) else bytes(payload or b""),
        attempt=int(attempt or 0),
        max_attempts=int(max_attempts or 1),
        lost=int(lost or 0),
        token=text(token),
        lease=float(lease or 0),
        timeout=float(timeout) if timeout else None,
        enqueued_at=float(enqueued_at or run_at or 0),
        run_at=float(run_at or 0),
        schedule=text(schedule) if schedule else None,
        fire_time=float(fire_time) if fire_time else None,
        started_at=float(started_at or 0),
        retry=text(retry) if retry else None,
    )


def pairs(flat: Sequence[bytes]) -> dict[bytes, bytes]:
    """A flat HGETALL-style reply as a dict."""
    return dict(zip(flat[::2], flat[1::2], strict=True))


def _one_success(h: Mapping[bytes, bytes]) -> dict[str, Any]:
    """The history entry of a job whose success is its history's only entry,
    which ``lua/finish.lua`` keeps as the fields ``ran_by`` and ``ran_on``:
    the entry the other outcomes write, key for key."""
    return {
        "attempt": int(h.get(b"attempt", 0)),
        "event": "succeeded",
        "worker": h[b"ran_by"].decode(),
        "host": _text(h.get(b"ran_on")),
        "at": _json.loads(h[b"finished_at"]),
    }


def job_from_hash(job_id: str, h: Mapping[bytes, bytes], now: float) -> Job:
    """A :class:`Job` from its id and hash; a scheduled job whose time has come
    shows as queued. Stored JSON that cannot be read shows as empty, and says
    why in ``error`` when the job has no error of its own. (The hash's own
    ``id`` field, written by earlier versions only, is not read: the key names
    the job. Fields left out at their defaults, ``L.JOB_DEFAULTS`` in
    ``lua/_base.lua``, read as those; an enqueued_at left out is the run_at.)"""
    args, kwargs, bad_payload = _payload.read(job_id, h.get(b"payload"))
    result, bad_result = _payload.read_json(h.get(b"result"), "result")
    history, bad_history = _payload.read_history(h.get(b"history"))
    if b"history" not in h and b"ran_by" in h:
        history = (_one_success(h),)
    state = JobState(h[b"state"].decode())
    run_at = float(h[b"run_at"])
    if state is JobState.SCHEDULED and run_at <= now:
        state = JobState.QUEUED
    return Job(
        id=job_id,
        task=h[b"task"].decode(),
        queue=h[b"queue"].decode(),
        state=state,
        args=args,
        kwargs=kwargs,
        priority=int(h.get(b"priority", 0)),
        run_at=run_at,
        enqueued_at=float(h.get(b"enqueued_at", run_at)),
        attempt=int(h.get(b"attempt", 0)),
        max_attempts=int(h.get(b"max_attempts", 1)),
        lost=int(h.get(b"lost", 0)),
        started_at=_float(h.get(b"started_at")),
        finished_at=_float(h.get(b"finished_at")),
        worker=_lease_text(h.get(b"owner")),
        lease_expires=_float(h.get(b"expires")),
        result=result,
        error=_text(h.get(b"error")) or bad_payload or bad_result or bad_history,
        traceback=_text(h.get(b"traceback")),
        history=history,
        limit_keys=_payload.read_limit_keys(h.get(b"limits")),
        unique_key=_text(h.get(b"ukey")),
        schedule=_text(h.get(b"schedule")),
        fire_time=_float(h.get(b"fire_time")),
        host=_text(h.get(b"host")),
        retry=_text(h.get(b"retry")),
    )


#: The column of each kind of stats field: succeeded, failed, retried.
_STATS_KINDS = {"s": 0, "f": 1, "r": 2}


def stats_field(field: bytes) -> tuple[str, str, str]:
    """``(kind, queue, task)`` from a stats hash field: ``s|f|r`` (succeeded,
    failed, failed and retried) + ``len(queue):`` + queue + task."""
    text = field.decode()
    length, _, rest = text[1:].partition(":")
    size = int(length)
    return text[0], rest[:size], rest[size:]


def minute_stats(minute: int, counts: Mapping[bytes, bytes]) -> list[MinuteStats]:
    """The rows of one stats hash, one per queue and task."""
    merged: dict[tuple[str, str], list[int]] = {}
    for field, value in counts.items():
        kind, queue, task = stats_field(field)
        merged.setdefault((queue, task), [0, 0, 0])[_STATS_KINDS[kind]] += int(value)
    return [MinuteStats(minute, queue, task, *row) for (queue, task), row in sorted(merged.items())]


#: The states a ``queues`` reply counts per queue, in order (see lua/queues.lua).
QUEUE_STATES = tuple(JobState)


def queue_infos(flat: Sequence[Any]) -> list[QueueInfo]:
    """The queues of a ``queues`` reply: name, mode, linked job, counts."""
    width = 3 + len(QUEUE_STATES)
    infos = []
    for i in range(0, len(flat), width):
        row = flat[i : i + width]
        counts = {s: int(n) for s, n in zip(QUEUE_STATES, row[3:], strict=True) if int(n)}
        infos.append(QueueInfo(text(row[0]), text(row[1]), counts, text(row[2]) or None))
    return infos


def worker_record(worker: WorkerInfo) -> bytes:
    """A heartbeat record; ``heartbeat_at`` is kept apart, on the store's clock."""
    info = asdict(worker)
    info.pop("heartbeat_at", None)
    return _json.dumps(info)


def worker_from_record(raw: bytes, heartbeat_at: float) -> WorkerInfo:
    """A :class:`WorkerInfo` from a heartbeat record and its time."""
    info: dict[str, Any] = _json.loads(raw)
    info["heartbeat_at"] = heartbeat_at
    return WorkerInfo.from_record(info)


def schedule_args(schedule: Schedule) -> list[bytes | str]:
    """ARGV of ``lua/upsert_schedule.lua``."""
    return [
        schedule.name,
        schedule.task,
        _json.dumps(schedule.trigger),
        schedule.payload,
        opt(None if schedule.next_fire is None else float(schedule.next_fire)),
        "1" if schedule.enabled else "0",
        schedule.misfire,
        opt(None if schedule.grace is None else float(schedule.grace)),
        schedule.overlap,
        repr(float(schedule.jitter)),
        _json.dumps(schedule.job_options),
    ]


def schedule_from_hash(h: Mapping[bytes, bytes]) -> Schedule:
    """A :class:`Schedule` from its hash."""
    return Schedule(
        name=h[b"name"].decode(),
        task=h[b"task"].decode(),
        trigger=_json.loads(h[b"trigger"]),
        payload=h[b"payload"],
        next_fire=_float(h.get(b"next_fire")),
        enabled=h.get(b"enabled", b"1") == b"1",
        misfire=h[b"misfire"].decode(),
        grace=_float(h.get(b"grace")),
        overlap=h[b"overlap"].decode(),
        jitter=float(h.get(b"jitter", b"0")),
        job_options=_json.loads(h[b"job_options"]),
        last_fire=_float(h.get(b"last_fire")),
        last_job_id=_text(h.get(b"last_job_id")),
        skipped=int(h.get(b"skipped", b"0")),
    )
