"""HTTP for the crawler: one httpx client per worker process, and one fetch.

The client is made by the app's ``on_worker_start`` hook in each worker
process and closed by its ``on_worker_stop`` hook; a process that runs
crawl jobs without those hooks (a child process of ``--mode processes``,
``rota.testing``) makes its own on first use. The client keeps connections
to each host alive between jobs and is shared by the process's threads.
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

__all__ = ["Clients", "Fetched", "conditional_headers", "content_hash", "get"]


class Clients:
    """The httpx client of each process, for one crawler."""

    def __init__(self, user_agent: str, timeout: float, max_redirects: int = 5) -> None:
        self._headers = {"User-Agent": user_agent}
        self._timeout = timeout
        self._max_redirects = max_redirects
        self._lock = threading.Lock()
        self._client: httpx.Client | None = None
        self._pid = 0

    def open(self) -> None:
        """Make this process's client (a worker's start hook)."""
        self.get()

    def get(self) -> httpx.Client:
        """This process's client, made on first use (a child process made by
        ``fork`` gets its own: connections are never shared across processes)."""
        with self._lock:
            if self._client is None or self._pid != os.getpid():
                self._client = httpx.Client(
                    headers=self._headers,
                    timeout=self._timeout,
                    follow_redirects=False,
                    max_redirects=self._max_redirects,
                )
                self._pid = os.getpid()
            return self._client

    def close(self) -> None:
        """Close this process's client (a worker's stop hook)."""
        with self._lock:
            client, self._client = self._client, None
            if client is not None and self._pid == os.getpid():
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
