"""Read-only inspection of the SQL engine (dashboard, CLI, handles)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
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
from rota.stores import _checks
from rota.stores.base import check_prefix
from rota.stores.sql.modes import queue_modes
from rota.stores.sql.tx import Database, Tx


def job_from_row(row: Sequence[Any], now: float) -> Job:
    """Build a :class:`Job` from a row selected as query ``jobs_by_id`` selects it. Stored
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
        host=row[24],
        retry=row[25],
    )


class Reads(Database):
    """The inspection verbs of the store contract."""

    def get_job(self, job_id: str) -> Job | None:
        return self.get_jobs([job_id])[0]

    def get_jobs(self, job_ids: Sequence[str]) -> list[Job | None]:
        asked = [job_id for job_id in job_ids if "\0" not in job_id]  # (as in list_jobs)
        with self._read() as tx:
            now = tx.now()
            rows = tx.rows_in("jobs_by_id", asked)
        found = {row[1]: job_from_row(row, now) for row in rows}
        return [found.get(job_id) for job_id in job_ids]

    def find_job_ids(self, prefix: str, limit: int = 2) -> list[str]:
        check_prefix(prefix, limit)
        upper = _next_string(prefix)
        with self._read() as tx:  # an index range scan (ids are unique)
            if upper is None:
                rows = tx.execute("ids_from", (prefix, len(prefix), prefix, limit))
            else:
                rows = tx.execute("ids_between", (prefix, upper, len(prefix), prefix, limit))
            return [row[0] for row in rows]

    def list_jobs(self, query: JobQuery, limit: int = 50, cursor: str | None = None) -> JobPage:
        if not 1 <= limit <= 1000:
            raise InvalidArgument(f"page size must be between 1 and 1000, not {limit}")
        before = _checks.page_cursor(cursor)
        if any("\0" in name for name in (query.queue, query.task, query.schedule) if name):
            # no stored name or id holds a control character, and PostgreSQL
            # takes no NUL in a text parameter: such a filter finds nothing
            return JobPage((), None)
        with self._read() as tx:
            now = tx.now()
            if query.queue is not None and self.pages_queues_apart:
                rows = _queue_page(tx, query, now, before, limit + 1)
            else:
                where, params = _filters(query, now)
                if before is not None:
                    where.append("before_seq")
                    params.append(before)
                rows = tx.execute("list_jobs", [*params, limit + 1], where=where).fetchall()
        jobs = tuple(job_from_row(row, now) for row in rows[:limit])
        next_cursor = str(rows[limit - 1][0]) if len(rows) > limit else None
        return JobPage(jobs, next_cursor)

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
        with self._read() as tx:
            now = tx.now()
            modes = queue_modes(tx)
            by_state_rows = tx.execute("count_by_state").fetchall()
            due_rows = tx.execute("due_by_queue", (now,)).fetchall()
        counts: dict[str, dict[JobState, int]] = {name: {} for name in modes}
        for queue, state, n in by_state_rows:
            by_state = counts.setdefault(queue, {})
            shown = JobState.QUEUED if state == "parked" else JobState(state)
            by_state[shown] = by_state.get(shown, 0) + n
        for queue, due in due_rows:
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
        with self._read() as tx:
            rows = tx.execute("stats_since", (int(since // 60),)).fetchall()
        return [MinuteStats(*row) for row in rows]

    def totals(self) -> list[MinuteStats]:
        with self._read() as tx:
            rows = tx.execute("stats_totals").fetchall()
        return [MinuteStats(*row) for row in rows]

    def workers(self) -> list[WorkerInfo]:
        with self._read() as tx:
            rows = tx.execute("worker_infos").fetchall()
        return [WorkerInfo.from_record(_json.loads(row[0])) for row in rows]

    def limits(self) -> list[LimitInfo]:
        with self._read() as tx:
            now = tx.now()
            rows = tx.execute("limit_infos").fetchall()
        result = []
        for key, running, conc, rate, burst, tokens, at, failures, open_until, *overrides in rows:
            override, rate_override = overrides
            in_force = rate if rate_override is None else rate_override
            if tokens is not None and in_force is not None:
                tokens = min(float(burst), tokens + max(0.0, now - at) * in_force)
            info = LimitInfo(key, running, conc, rate, burst, tokens, failures, open_until)
            result.append(replace(info, override=override, rate_override=rate_override))
        return result


def _filters(query: JobQuery, now: float) -> tuple[list[str], list[Any]]:
    """The named filter fragments of ``query`` and their parameters."""
    where: list[str] = []
    params: list[Any] = []
    if query.queue is not None:
        where.append("of_queue")
        params.append(query.queue)
    if query.task is not None:
        where.append("of_task")
        params.append(query.task)
    if query.state is JobState.QUEUED:  # due scheduled jobs count as queued
        where.append("is_queued_by")
        params.append(now)
    elif query.state is JobState.SCHEDULED:
        where.append("is_scheduled_after")
        params.append(now)
    elif query.state is not None:
        where.append("in_state")
        params.append(query.state.value)
    if query.schedule is not None:
        where.append("of_schedule")
        params.append(query.schedule)
    if query.search:
        where.append("payload_has")
        params.append(query.search.encode())
    return where, params


def _queue_page(tx: Tx, query: JobQuery, now: float, before: int | None, size: int) -> list[Any]:
    """Up to ``size`` jobs of ``query.queue``, newest first, older than
    ``before``, through the dialect's queries of one queue
    (:attr:`Database.pages_queues_apart`): ``list_queue`` takes the queue,
    ``list_queue_state`` the queue and a state, and then the parameters of
    the other filters' fragments (``{where}``). Queued jobs (queued, parked
    and due scheduled ones) are the newest of each of the three states,
    merged by ``list_queue_queued``: a filter ``IN`` the states would be one
    range of the index the database sorts whole."""
    state = query.state
    where, params = _filters(replace(query, queue=None, state=None), now)
    if state is JobState.SCHEDULED:
        where.append("runs_after")
        params.append(now)
    if before is not None:
        where.append("before_seq")
        params.append(before)
    if state is None:
        return tx.execute("list_queue", [query.queue, *params, size], where=where).fetchall()
    if state is not JobState.QUEUED:
        args = [query.queue, state.value, *params, size]
        return tx.execute("list_queue_state", args, where=where).fetchall()
    branch = [query.queue, *params]
    args = [*branch, size, *branch, size, *branch, now, size, size]
    return tx.execute("list_queue_queued", args, where=where).fetchall()


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


__all__ = ["Reads", "job_from_row"]
