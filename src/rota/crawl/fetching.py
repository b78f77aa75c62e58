"""HTTP for the crawler: an httpx client per thread of a worker process, and one fetch.

A thread makes its client on first use and keeps it: the client keeps
connections to each host alive between the thread's jobs. The clients are
not shared between threads: a connection pool shared by threads can close
an idle connection that another thread has just been given, and that
thread's request then fails after the host answered it (httpcore issue
1110), which made a crawl fetch a page twice. A worker's ``on_worker_stop``
hook closes every client its process made; a child made by ``fork`` makes
its own (connections are never shared across processes).
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

__all__ = ["MAX_REDIRECTS", "Clients", "Fetched", "conditional_headers", "content_hash", "get"]


#: Most redirects followed in a row: by a robots.txt fetch (httpx follows
#: them), and from a page (each one a fetch job; a longer chain stops there).
MAX_REDIRECTS = 5


class Clients:
    """The httpx clients of a process, one per thread, for one crawler."""

    def __init__(self, user_agent: str, timeout: float) -> None:
        self._headers = {"User-Agent": user_agent}
        self._timeout = timeout
        self._lock = threading.Lock()
        self._local = threading.local()
        self._made: list[httpx.Client] = []  # by this process, to close at its end
        self._pid = os.getpid()

    def open(self) -> None:
        """Make the calling thread's client (a worker's start hook)."""
        self.get()

    def get(self) -> httpx.Client:
        """The calling thread's client, made on first use."""
        client: httpx.Client | None = getattr(self._local, "client", None)
        if client is not None and self._local.pid == os.getpid():
            return client
        client = httpx.Client(
            headers=self._headers,
            timeout=self._timeout,
            follow_redirects=False,
            max_redirects=MAX_REDIRECTS,
        )
        self._local.client, self._local.pid = client, os.getpid()
        with self._lock:
            if self._pid != os.getpid():  # forked: the parent's clients are not ours
                self._made, self._pid = [], os.getpid()
            self._made.append(client)
        return client

    def close(self) -> None:
        """Close every client this process made (a worker's stop hook); a
        thread that fetches afterwards makes a new one."""
        with self._lock:
            made, self._made = self._made, []
            self._local = threading.local()
            mine = self._pid == os.getpid()
        if mine:
            for client in made:
                client.close()


@dataclass(frozen=True, slots=True)
class Fetched:
    """One HTTP answer: the URL asked for, its status and headers, the body
    (at most the crawler's ``max_bytes``: ``truncated`` says if it was
    longer) and the seconds from the request to the end of the body."""

    url: str
    status: int
    headers: httpx.Headers
    content: bytes
    seconds: float
    truncated: bool = False


def conditional_headers(previous: Mapping[str, Any] | None) -> dict[str, str]:
    """``If-None-Match`` and ``If-Modified-Since`` from the validators the
    last fetch of a page remembered (its ``etag`` and ``last_modified``)."""
    headers: dict[str, str] = {}
    if not previous:
        return headers
    etag, modified = previous.get("etag"), previous.get("last_modified")
    if isinstance(etag, str) and etag:
        headers["If-None-Match"] = etag
    if isinstance(modified, str) and modified:
        headers["If-Modified-Since"] = modified
    return headers


def get(
    client: httpx.Client,
    url: str,
    *,
    max_bytes: int,
    headers: Mapping[str, str] | None = None,
    follow_redirects: bool = False,
) -> Fetched:
    """GET ``url`` and read at most ``max_bytes`` of its body. Network
    errors and timeouts raise httpx's :class:`httpx.TransportError`."""
    started = time.monotonic()
    with client.stream(
        "GET", url, headers=dict(headers or {}), follow_redirects=follow_redirects
    ) as response:
        chunks: list[bytes] = []
        size, truncated = 0, False
        for chunk in response.iter_bytes():
            if size + len(chunk) > max_bytes:
                chunks.append(chunk[: max_bytes - size])
                truncated = True
                break
            chunks.append(chunk)
            size += len(chunk)
        return Fetched(
            url=url,
            status=response.status_code,
            headers=response.headers,
            content=b"".join(chunks),
            seconds=time.monotonic() - started,
            truncated=truncated,
        )


def content_hash(content: bytes) -> str:
    """A short digest of a body: the same body, the same digest."""
    return hashlib.blake2b(content, digest_size=16).hexdigest()
