"""Read-only inspection of the Redis store (dashboard, CLI, handles).

Pages come from the sequence-scored indexes (per state, per queue and state,
per task, per schedule), never from scanning every job; counts are index sizes.
Queued jobs sit only in their queue's paged index (``qpage:QUEUE:N``, see
``lua/_base.lua``, ``L.queued_add``): where a page needs every queued job, or
every queued job of a task, it reads those of every queue.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

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
from rota.stores.redis import _codec
from rota.stores.redis._base import RedisBase, guarded
from rota.stores.redis.keys import STATS_TTL

#: Most jobs one list_jobs call looks at; a page of a rare match comes back
#: short, with a cursor to go on from.
SCAN_CAP = 20_000
_STATES = tuple(JobState)
#: Members one ZSCAN round trip of :meth:`Reads.find_job_ids` looks at.
ZSCAN_COUNT = 5000
_GLOB_SPECIAL = re.compile(r"[\\*?\[\]^-]")


class Reads(RedisBase):
    """The inspection half of the store protocol."""

    @guarded
    def get_job(self, job_id: str) -> Job | None:
        return self.get_jobs([job_id])[0]

    @guarded
    def get_jobs(self, job_ids: Sequence[str]) -> list[Job | None]:
        if not job_ids:
            return []
        pipe = self._client.pipeline(transaction=False)
        for job_id in job_ids:
            pipe.hgetall(self.keys.job(job_id))
        pipe.time()
        *hashes, (seconds, micros) = pipe.execute()
        now = float(seconds) + micros / 1_000_000
        return [
            _codec.job_from_hash(job_id, h, now) if h else None
            for job_id, h in zip(job_ids, hashes, strict=True)
        ]

    @guarded
    def find_job_ids(self, prefix: str, limit: int = 2) -> list[str]:
        """Jobs have no index by id, so this walks the per-state indexes with
        ZSCAN, :data:`ZSCAN_COUNT` members per call (each call holds the server
        for ~10 ms): an operator's lookup of a short id, linear in the
        namespace's jobs (~0.4 s for 100,000), never on a worker's path; a
        whole id is looked up directly by :meth:`Store.resolve_job_id`."""
        check_prefix(prefix, limit)
        found: set[str] = set()
        if self._client.exists(self.keys.job(prefix)):
            found.add(prefix)
        pattern = _GLOB_SPECIAL.sub(r"\\\g<0>", prefix) + "*"
        indexes = [self.keys.state(s) for s in _STATES if s is not JobState.QUEUED]
        for index in [*indexes, *(self.keys.qstate(q, JobState.QUEUED) for q in self._queues())]:
            for member in self._client.zscan_iter(index, match=pattern, count=ZSCAN_COUNT):
                found.add(_codec.text(member[0]))
                if len(found) >= limit:
                    return sorted(found)[:limit]  # an exact match sorts first
        for ids in self._queued_pages():
            found.update(i for i in map(_codec.text, ids) if i.startswith(prefix))
            if len(found) >= limit:
                return sorted(found)[:limit]
        return sorted(found)

    def _queued_pages(self, batch: int = 500) -> Iterator[list[bytes]]:
        """The job ids of every page of every queue's queued jobs, ``batch``
        pages per round trip."""
        k = self.keys
        for queue in self._queues():
            pages: list[bytes] = self._client.zrange(k.qpages(queue), 0, -1)  # type: ignore[assignment]
            for start in range(0, len(pages), batch):
                pipe = self._client.pipeline(transaction=False)
                for page in pages[start : start + batch]:
                    pipe.zrange(k.qpage(queue, int(page)), 0, -1)
                yield from pipe.execute()

    @guarded
    def list_jobs(self, query: JobQuery, limit: int = 50, cursor: str | None = None) -> JobPage:
        if not 1 <= limit <= 1000:
            raise InvalidArgument(f"page size must be between 1 and 1000, not {limit}")
        _checks.page_cursor(cursor)
        keys, layout = self._candidate_indexes(query)
        args: list[str] = [
            str(limit),
            cursor or "",
            str(SCAN_CAP),
            query.queue or "",
            query.task or "",
            query.state.value if query.state is not None else "",
            query.schedule or "",
            query.search or "",
            *layout,
        ]
        reply = self._run("list_jobs", args, keys)
        next_cursor, now = reply[0].decode(), float(reply[1])
        hashes = [_codec.pairs(flat) for flat in reply[2:]]  # each ends with "id", the job's id
        jobs = tuple(_codec.job_from_hash(h[b"id"].decode(), h, now) for h in hashes)
        return JobPage(jobs, next_cursor or None)

    def _candidate_indexes(self, query: JobQuery) -> tuple[list[str], list[str]]:
        """Groups of index keys, each covering every job the query can match;
        the script scans the smallest. Returns the keys and the layout ARGV."""
        k = self.keys
        states: tuple[JobState, ...] = _STATES
        if query.state is JobState.QUEUED:
            states = (JobState.QUEUED, JobState.SCHEDULED)  # scheduled and due
        elif query.state is not None:
            states = (query.state,)
        queued = JobState.QUEUED in states
        every_queue = list(self._queued_indexes(self._queues())) if queued else []
        groups: list[list[str]] = []
        if query.queue is not None:
            own = [k.qstate(query.queue, s) for s in states if s is not JobState.QUEUED]
            if queued:
                own += self._queued_indexes([query.queue])
            groups.append(own)
        if query.task is not None:
            groups.append([k.task(query.task), *every_queue])
        if query.schedule is not None:
            groups.append([k.sched(query.schedule)])
        groups.append([*(k.state(s) for s in states if s is not JobState.QUEUED), *every_queue])
        keys: list[str] = []
        layout = [str(len(groups))]
        for group in groups:
            layout.append(str(len(group)))
            for key in group:
                keys.append(key)
                ref = str(len(keys) + 1)  # KEYS[1] is the prefix
                layout.append("p" + ref if key.startswith(k.qpages("")) else ref)
        return keys, layout

    def _queues(self) -> list[str]:
        """Every queue that ever had a job, by name."""
        return sorted(_codec.text(q) for q in self._client.smembers(self.keys.static("queues")))

    def _queued_indexes(self, queues: Sequence[str]) -> Iterator[str]:
        """The indexes of the queues' queued jobs (they have no global one): each
        queue's paged index, by its ``qpages:`` key, and the sorted set that
        earlier versions wrote."""
        for queue in queues:
            yield self.keys.qpages(queue)
            yield self.keys.qstate(queue, JobState.QUEUED)

    def iter_results(
        self, queue: str | None = None, task: str | None = None, batch: int = 1000
    ) -> Iterator[Job]:
        query = JobQuery(queue=queue, task=task, state=JobState.SUCCEEDED)
        cursor: str | None = None
        while True:
            page = self.list_jobs(query, limit=max(1, min(batch, 1000)), cursor=cursor)
            yield from page.jobs
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    @guarded
    def queues(self) -> list[QueueInfo]:
        return sorted(_codec.queue_infos(self._run("queues")), key=lambda q: q.name)

    @guarded
    def throughput(self, since: float) -> list[MinuteStats]:
        now = self.now()
        last = int(now // 60)
        first = max(int(since // 60), last - STATS_TTL // 60 - 1, 1)
        pipe = self._client.pipeline(transaction=False)
        minutes = range(first, last + 1)
        for minute in minutes:
            pipe.hgetall(self.keys.stats(minute))
        rows: list[MinuteStats] = []
        for minute, counts in zip(minutes, pipe.execute(), strict=True):
            if counts:
                rows += _codec.minute_stats(minute, counts)
        return rows

    @guarded
    def totals(self) -> list[MinuteStats]:
        counts: dict[bytes, bytes] = self._client.hgetall(self.keys.static("totals"))  # type: ignore[assignment]
        return _codec.minute_stats(0, counts)

    @guarded
    def workers(self) -> list[WorkerInfo]:
        beats: list[tuple[bytes, float]] = self._client.zrevrange(  # type: ignore[assignment]
            self.keys.static("heartbeats"), 0, -1, withscores=True
        )
        if not beats:
            return []
        records: list[bytes | None] = self._client.hmget(  # type: ignore[assignment]
            self.keys.static("workers"), [w for w, _ in beats]
        )
        return [
            _codec.worker_from_record(raw, at)
            for (_, at), raw in zip(beats, records, strict=True)
            if raw is not None
        ]

    @guarded
    def limits(self) -> list[LimitInfo]:
        names = sorted(_codec.text(m) for m in self._client.smembers(self.keys.static("limkeys")))
        if not names:
            return []
        pipe = self._client.pipeline(transaction=False)
        for name in names:
            pipe.hgetall(self.keys.limit(name))
        pipe.time()
        *hashes, (seconds, micros) = pipe.execute()
        now = float(seconds) + micros / 1_000_000
        return [_limit_info(name, h, now) for name, h in zip(names, hashes, strict=True)]


def _limit_info(key: str, h: dict[bytes, bytes], now: float) -> LimitInfo:
    def num(field: bytes) -> float | None:
        raw = h.get(field)
        return None if raw is None else float(raw)

    override, declared = num(b"override"), num(b"concurrency")
    concurrency = override if override is not None else declared
    rate, burst, tokens, at = num(b"rate"), num(b"burst"), num(b"tokens"), num(b"tokens_at")
    rate_override = num(b"rate_override")
    in_force = rate if rate_override is None else rate_override
    if tokens is not None and in_force is not None and burst is not None and at is not None:
        tokens = min(burst, tokens + max(0.0, now - at) * in_force)
    return LimitInfo(
        key=key,
        running=int(num(b"running") or 0),
        concurrency=None if concurrency is None else int(concurrency),
        rate=rate,
        burst=None if burst is None else int(burst),
        tokens=tokens,
        failures=int(num(b"failures") or 0),
        open_until=num(b"open_until"),
        override=None if override is None else int(override),
        rate_override=rate_override,
    )
