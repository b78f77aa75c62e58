"""The shared frontier of Scrapy processes: requests as jobs in rota's store.

Each request is a job of the task ``NAME.request`` on its own queue (never
run by a ``rota worker``: Scrapy processes claim them). It carries its host
(``example.com``, ``127.0.0.1:8001``: the key the crawl kit uses) as the
key of a concurrency limit and, if one is set, of a rate, so the store
holds each host's politeness at claim time for every process on every
machine, and the host is the job's fair key. Its fingerprint is its
unique key, held while it is pending or running and ``unique_for`` seconds
after (for good by default): a request seen anywhere is not sent again.

A claim is a lease: this process renews it while the request is in
flight; a process that dies stops renewing, the lease runs out, and
``recover`` (which every process here calls, as workers do) puts the
request back in the queue for another process.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from rota import _json, _payload
from rota.limits import Limit, Rate
from rota.models import HostScope, JobState, LeaseRef, Outcome, WorkerInfo

if TYPE_CHECKING:
    from rota.app import App
    from rota.task import Task

__all__ = ["Claim", "Politeness", "SharedFrontier", "host_of"]


class NotForWorkers(RuntimeError):
    """A request job was claimed by a rota worker instead of Scrapy."""


@dataclass(frozen=True, slots=True)
class Politeness:
    """What the store holds each host to, for every process at once."""

    per_host: int = 2
    rate: float | str | None = None
    burst: int = 1


@dataclass(frozen=True, slots=True)
class Claim:
    """One request this process leased from the store."""

    job_id: str
    token: str
    data: dict[str, Any]


#: Ports a URL's host key leaves out, as the crawl kit's canonical URLs do.
DEFAULT_PORTS = {"http": 80, "https": 443}


def host_of(url: str) -> str:
    """The politeness key of ``url``, as the crawl kit makes it: the host,
    lowercased and without a trailing dot, with its port unless that is the
    scheme's default (``example.com``, ``127.0.0.1:8001``)."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower().rstrip(".")
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    if parts.port is None or DEFAULT_PORTS.get(parts.scheme) == parts.port:
        return host
    return f"{host}:{parts.port}"


class SharedFrontier:
    """Sends, claims, renews and finishes the request jobs of one crawl."""

    def __init__(
        self,
        app: App,
        name: str,
        *,
        queue: str,
        politeness: Politeness,
        unique_for: float | None,
        concurrency: int,
    ) -> None:
        Limit("host", politeness.per_host)  # refuse bad settings now, not at the first send
        if politeness.rate is not None:
            Rate(politeness.rate, burst=politeness.burst, key="host")
        self.app = app
        self.queue = queue
        self.politeness = politeness
        self.unique_for = unique_for
        self.concurrency = concurrency
        self.worker_id = f"{socket.gethostname()}-{os.getpid()}-scrapy-{uuid.uuid4().hex[:6]}"
        #: Requests sent to this machine's host name are served here too.
        self.host = HostScope(socket.gethostname())
        self.started_at = time.time()
        self.task: Task[..., Any] = app.task(name=f"{name}.request", queue=queue)(_not_for_workers)

    def send(self, data: dict[str, Any], *, priority: int, key: str | None) -> bool:
        """Store one request (as :func:`rota.crawl.scrapy.stored.encode`
        gave it); ``key``, its fingerprint, makes it unique. False when the
        store already had it (pending, running or done)."""
        p = self.politeness
        host = host_of(data["url"])
        options: dict[str, Any] = {
            "priority": priority,
            "concurrency": Limit(host, p.per_host),
            "unique": key,
            "unique_for": self.unique_for if key is not None else None,
        }
        if p.rate is not None:
            options["rate"] = Rate(p.rate, burst=p.burst, key=host)
        handle = self.task.options(**options).send(data)
        return not handle.duplicate

    def claim(self) -> Claim | None:
        """Lease the next request the store allows (None if none is)."""
        jobs = self.app.store.claim(self.worker_id, [self.queue], 1, self.host)
        if not jobs:
            return None
        job = jobs[0]
        args, _ = _payload.decode(job.id, job.payload)
        return Claim(job.id, job.token, args[0])

    def finish(self, claim: Claim, *, result: dict[str, Any] | None, error: str | None) -> bool:
        """End a claimed request's job: succeeded with ``result``, or failed
        with ``error`` (not retried). False if the lease was lost meanwhile."""
        if error is None:
            outcome = Outcome(claim.job_id, claim.token, True, result=_json.dumps(result))
        else:
            outcome = Outcome(claim.job_id, claim.token, False, error=error)
        return self.app.store.finish([outcome])[0]

    def release(self, claims: list[Claim]) -> None:
        """Give requests back to the queue without counting an attempt."""
        if claims:
            self.app.store.release([LeaseRef(c.job_id, c.token) for c in claims])

    def renew(self, claims: list[Claim]) -> list[Claim]:
        """Renew the leases of ``claims``, bring back the requests of dead
        processes (expired leases) and say this process is alive; returns
        the claims whose lease was lost."""
        store = self.app.store
        states = store.extend([LeaseRef(c.job_id, c.token) for c in claims]) if claims else []
        store.recover()
        store.heartbeat(
            WorkerInfo(
                id=self.worker_id,
                host=self.host.name,
                pid=os.getpid(),
                queues=(self.queue,),
                concurrency=self.concurrency,
                mode="scrapy",
                running=len(claims),
                started_at=self.started_at,
            )
        )
        return [c for c, state in zip(claims, states, strict=True) if state == "lost"]

    def pending(self) -> bool:
        """Whether any request of the crawl is queued, scheduled or running,
        in any process."""
        for info in self.app.store.queues():
            if info.name == self.queue:
                counts = info.counts
                live = (JobState.QUEUED, JobState.SCHEDULED, JobState.RUNNING)
                return any(counts.get(state, 0) for state in live)
        return False

    def close(self) -> None:
        """Forget this process in the store."""
        self.app.store.remove_worker(self.worker_id)


def _not_for_workers(data: dict[str, Any]) -> None:
    raise NotForWorkers(
        f"{data.get('url')}: requests of a Scrapy crawl are claimed by Scrapy processes "
        "(rota.crawl.scrapy.Scheduler), not by rota workers: serve this queue with none"
    )
