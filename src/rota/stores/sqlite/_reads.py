"""Read-only inspection queries of the SQLite store (dashboard, CLI, handles)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

from rota import _json, _payload
from rota.errors import InvalidArgument
from rota.models import (
    Job,
    JobPage,
    JobQuery,
    JobState,
    LimitInfo,
    MinuteStats,
    QueueInfo,
    WorkerInfo,
)
from rota.stores.base import check_prefix
from rota.stores.sqlite._conn import Connections
from rota.stores.sqlite._modes import queue_modes

_JOB_COLUMNS = (
    "seq, id, task, queue, state, payload, priority, run_at, enqueued_at, attempt,"
    " max_attempts, lost, started_at, finished_at, lease_owner, lease_expires, result,"
    " error, traceback, history, limits, unique_key, schedule, fire_time"
)


def job_from_row(row: Sequence[Any], now: float) -> Job:
    """Build a :class:`Job` from a row selected with ``_JOB_COLUMNS``. Stored
    JSON that cannot be read shows as empty, and says why in ``error`` when
    the job has no error of its own."""
    args, kwargs, bad_payload = _payload.read(row[1], row[5])
    result, bad_result = _payload.read_json(row[16], "result")
    history, bad_history = _payload.read_history(row[19])
    state = JobState.QUEUED if row[4] == "parked" else JobState(row[4])
    if state is JobState.SCHEDULED and row[7] <= now:
        state = JobState.QUEUED
    return Job(
        id=row[1],
        task=row[2],
        queue=row[3],
        state=state,
        args=args,
        kwargs=kwargs,
        priority=row[6],
        run_at=row[7],
        enqueued_at=row[8],
        attempt=row[9],
        max_attempts=row[10],
        lost=row[11],
        started_at=row[12],
        finished_at=row[13],
        worker=row[14],
        lease_expires=row[15],
        result=result,
        error=row[17] or bad_payload or bad_result or bad_history,
        traceback=row[18],
        history=history,
        limit_keys=_payload.read_limit_keys(row[20]),
        unique_key=row[21],
        schedule=row[22],
        fire_time=row[23],
    )


class Reads(Connections):
    """The inspection half of the store protocol."""

    def get_job(self, job_id: str) -> Job | None:
        return self.get_jobs([job_id])[0]

    def get_jobs(self, job_ids: Sequence[str]) -> list[Job | None]:
        now = time.time()
        found: dict[str, Job] = {}
        conn = self._conn()
        for start in range(0, len(job_ids), 500):
            chunk = list(job_ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            for row in conn.execute(
                f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id IN ({marks})", chunk
            ):
                found[row[1]] = job_from_row(row, now)
        return [found.get(job_id) for job_id in job_ids]

    def find_job_ids(self, prefix: str, limit: int = 2) -> list[str]:
        check_prefix(prefix, limit)
        upper = _next_string(prefix)
        sql = "SELECT id FROM jobs WHERE id >= ?"  # an index range scan (ids are UNIQUE)
        params: list[Any] = [prefix]
        if upper is not None:
            sql += " AND id < ?"
            params.append(upper)
        sql += " AND substr(id, 1, ?) = ? ORDER BY id LIMIT ?"
        params += [len(prefix), prefix, limit]
        return [row[0] for row in self._conn().execute(sql, params)]

    def list_jobs(self, query: JobQuery, limit: int = 50, cursor: str | None = None) -> JobPage:
        if not 1 <= limit <= 1000:
            raise InvalidArgument(f"page size must be between 1 and 1000, not {limit}")
        where, params = self._filters(query)
        if cursor is not None:
            try:
                where.append("seq < ?")
                params.append(int(cursor))
            except ValueError:
                raise InvalidArgument(f"bad cursor {cursor!r}") from None
        sql = f"SELECT {_JOB_COLUMNS} FROM jobs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY seq DESC LIMIT ?"
        rows = self._conn().execute(sql, [*params, limit + 1]).fetchall()
        now = time.time()
        jobs = tuple(job_from_row(row, now) for row in rows[:limit])
        next_cursor = str(rows[limit - 1][0]) if len(rows) > limit else None
        return JobPage(jobs, next_cursor)

    @staticmethod
    def _filters(query: JobQuery) -> tuple[list[str], list[Any]]:
        where: list[str] = []
        params: list[Any] = []
        if query.queue is not None:
            where.append("queue = ?")
            params.append(query.queue)
        if query.task is not None:
            where.append("task = ?")
            params.append(query.task)
        if query.state is JobState.QUEUED:  # due scheduled jobs count as queued
            where.append(
                "state IN ('queued', 'parked', 'scheduled')"
                " AND (state != 'scheduled' OR run_at <= ?)"
            )
            params.append(time.time())
        elif query.state is JobState.SCHEDULED:
            where.append("state = 'scheduled' AND run_at > ?")
            params.append(time.time())
        elif query.state is not None:
            where.append("state = ?")
            params.append(query.state.value)
        if query.schedule is not None:
            where.append("schedule = ?")
            params.append(query.schedule)
        if query.search:
            where.append("instr(payload, ?) > 0")
            params.append(query.search.encode())
        return where, params

    def iter_results(
        self, queue: str | None = None, task: str | None = None, batch: int = 1000
    ) -> Iterator[Job]:
        query = JobQuery(queue=queue, task=task, state=JobState.SUCCEEDED)
        cursor: str | None = None
        while True:
            page = self.list_jobs(query, limit=min(batch, 1000), cursor=cursor)
            yield from page.jobs
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def queues(self) -> list[QueueInfo]:
        conn = self._conn()
        now = time.time()
        modes = queue_modes(conn)
        counts: dict[str, dict[JobState, int]] = {name: {} for name in modes}
        for queue, state, n in conn.execute(
            "SELECT queue, state, count(*) FROM jobs GROUP BY queue, state"
        ):
            by_state = counts.setdefault(queue, {})
            shown = JobState.QUEUED if state == "parked" else JobState(state)
            by_state[shown] = by_state.get(shown, 0) + n
        for queue, due in conn.execute(
            "SELECT queue, count(*) FROM jobs INDEXED BY jobs_due"
            " WHERE state = 'scheduled' AND run_at <= ? GROUP BY queue",
            (now,),
        ):
            by_state = counts[queue]
            by_state[JobState.SCHEDULED] -= due
            by_state[JobState.QUEUED] = by_state.get(JobState.QUEUED, 0) + due
        infos = []
        for name, by_state in sorted(counts.items()):
            nonzero = {state: n for state, n in by_state.items() if n}
            queue_mode, debug_job = modes.get(name, ("running", None))
            if nonzero or queue_mode != "running":
                infos.append(QueueInfo(name, queue_mode, nonzero, debug_job))
        return infos

    def throughput(self, since: float) -> list[MinuteStats]:
        rows = self._conn().execute(
            "SELECT minute, queue, task, succeeded, failed, retried FROM stats"
            " WHERE minute >= ? AND minute > 0 ORDER BY minute",
            (int(since // 60),),
        )
        return [MinuteStats(*row) for row in rows]

    def totals(self) -> list[MinuteStats]:
        rows = self._conn().execute(
            "SELECT minute, queue, task, succeeded, failed, retried FROM stats WHERE minute = 0"
        )
        return [MinuteStats(*row) for row in rows]

    def workers(self) -> list[WorkerInfo]:
        rows = self._conn().execute("SELECT info FROM workers ORDER BY heartbeat_at DESC")
        return [_worker(_json.loads(row[0])) for row in rows]

    def limits(self) -> list[LimitInfo]:
        rows = self._conn().execute(
            "SELECT key, running, coalesce(override, concurrency), rate, burst, tokens,"
            " tokens_at, failures, open_until, override FROM limits ORDER BY key"
        )
        now = time.time()
        result = []
        for key, running, conc, rate, burst, tokens, at, failures, open_until, override in rows:
            if tokens is not None and rate is not None:
                tokens = min(float(burst), tokens + max(0.0, now - at) * rate)
            result.append(
                LimitInfo(key, running, conc, rate, burst, tokens, failures, open_until, override)
            )
        return result


def _next_string(prefix: str) -> str | None:
    """The least string above every string that starts with ``prefix`` (code
    point order, which is UTF-8 byte order); None when there is none."""
    while prefix and prefix[-1] == "\U0010ffff":
        prefix = prefix[:-1]
    if not prefix:
        return None
    following = ord(prefix[-1]) + 1
    if 0xD800 <= following <= 0xDFFF:  # surrogates are not characters
        following = 0xE000
    return prefix[:-1] + chr(following)


def _worker(info: dict[str, Any]) -> WorkerInfo:
    info["queues"] = tuple(info["queues"])
    return WorkerInfo(**info)


__all__ = ["Reads", "job_from_row"]
