"""Job logs of the Redis store: one list per attempt, ``P logs:ID:ATTEMPT``.

Appending is one script (``lua/append_logs.lua``) that enforces the cap;
the lists are deleted with their job (``L.remove_job``).
"""

from __future__ import annotations

from collections.abc import Sequence

from rota import _json
from rota.models import LogChunk
from rota.stores.base import DEFAULT_LOG_CAP, MAX_LOG_PAGE, check_log_chunks, check_log_query
from rota.stores.redis._base import RedisBase, guarded


class Logs(RedisBase):
    """``append_logs`` and ``job_logs``."""

    def append_logs(self, chunks: Sequence[LogChunk], cap: int = DEFAULT_LOG_CAP) -> None:
        check_log_chunks(chunks, cap)
        if not chunks:
            return
        args: list[str | int | float] = [cap]
        for c in chunks:
            args += [c.job_id, c.attempt, c.stream, float(c.at), c.data]
        self._run("append_logs", args)

    @guarded
    def job_logs(
        self, job_id: str, attempt: int | None = None, after: int = 0, limit: int = MAX_LOG_PAGE
    ) -> list[LogChunk]:
        check_log_query(job_id, attempt, after, limit)
        if attempt is None:
            last = self._client.hget(self.keys.job(job_id), "logmax")
            attempts = list(range(1, int(last or 0) + 1))
        else:
            attempts = [attempt]
        found: list[LogChunk] = []
        for number in attempts:
            rows: list[bytes] = self._client.lrange(self.keys.logs(job_id, number), 0, -1)  # type: ignore[assignment]
            for raw in rows:
                seq, stream, at, data = _json.loads(raw)
                if seq > after:
                    found.append(LogChunk(job_id, number, stream, data, float(at), seq))
                    if len(found) >= limit:
                        return found
        return found
