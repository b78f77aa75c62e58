"""A generated web site for crawl tests: several hosts on loopback ports,
each a small threaded HTTP server that logs every request it answers.

Each host has pages (paths and the links on them, as ``(host label,
path)``), a robots.txt (a list of answers given in turn, the last one
repeated), a response delay, and may answer some page requests 429 with a
``Retry-After``. Pages have a version: :meth:`Site.change` bumps it, which
changes their content and validators (an ``ETag``, a ``Last-Modified``, or
none), and the server answers conditional requests for the current
version with 304.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Target = tuple[str, str]  # (host label, path)


@dataclass
class HostSpec:
    """One host of the site."""

    pages: dict[str, list[Target]]
    robots: list[tuple[int, str]] = field(default_factory=lambda: [(404, "")])
    delay: float = 0.0
    #: Page requests (counted from 1) answered 429 with ``retry_after``.
    throttle: frozenset[int] = frozenset()
    retry_after: int = 1
    #: "etag", "last-modified" or None (no validators: always a full 200).
    validator: str | None = "etag"
    #: Paths answered 302, to the path given (checked before ``pages``).
    redirects: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Request:
    """One request as the server saw it."""

    host: str
    path: str
    start: float
    end: float
    status: int
    if_none_match: str | None
    if_modified_since: str | None

    @property
    def conditional(self) -> bool:
        return self.if_none_match is not None or self.if_modified_since is not None


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client gone before its answer was written (a worker stopped
        mid-fetch) is no error of the site's; anything else is printed."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Host:
    def __init__(self, site: Site, label: str, spec: HostSpec) -> None:
        self.site, self.label, self.spec = site, label, spec
        self.versions = dict.fromkeys(spec.pages, 1)
        self.extra: dict[str, list[Target]] = {}
        self.robots_asked = 0
        self.pages_asked = 0
        self.lock = threading.Lock()
        self.server = _Server(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        host = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                start = time.time()
                status, headers, body = host.answer(self.path, self.headers)
                # recorded before the answer goes out: once it is out, the
                # client may go on (and a test count the requests) before this
                # thread runs again (the test process's other threads hold the GIL)
                host.site.record(
                    Request(
                        host.label,
                        self.path,
                        start,
                        time.time(),
                        status,
                        self.headers.get("If-None-Match"),
                        self.headers.get("If-Modified-Since"),
                    )
                )
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                self.wfile.flush()

            def log_message(self, format: str, *args: object) -> None:
                return None

        return Handler

    def answer(self, path: str, asked: object) -> tuple[int, dict[str, str], bytes]:
        spec = self.spec
        if path == "/robots.txt":
            with self.lock:
                self.robots_asked += 1
                status, text = spec.robots[min(self.robots_asked, len(spec.robots)) - 1]
            return status, {"Content-Type": "text/plain"}, text.encode()
        time.sleep(spec.delay)
        if path in spec.redirects:
            return 302, {"Location": spec.redirects[path]}, b""
        if path not in spec.pages:
            return 404, {"Content-Type": "text/html"}, b"<html><title>gone</title></html>"
        with self.lock:
            self.pages_asked += 1
            throttled = self.pages_asked in spec.throttle
            version = self.versions[path]
        if throttled:
            headers = {"Retry-After": str(spec.retry_after), "Content-Type": "text/plain"}
            return 429, headers, b"slow down"
        headers = {"Content-Type": "text/html; charset=utf-8"}
        etag, modified = f'"{self.label}{path}-v{version}"', formatdate(1e9 + version, usegmt=True)
        if spec.validator == "etag":
            headers["ETag"] = etag
            if asked.get("If-None-Match") == etag:  # type: ignore[attr-defined]
                return 304, {"ETag": etag}, b""
        elif spec.validator == "last-modified":
            headers["Last-Modified"] = modified
            if asked.get("If-Modified-Since") == modified:  # type: ignore[attr-defined]
                return 304, {}, b""
        return 200, headers, self.page(path, version).encode()

    def page(self, path: str, version: int) -> str:
        links = self.spec.pages[path] + self.extra.get(path, [])
        anchors = "".join(
            f'<a href="{self.site.url(label, target)}">{label}{target}</a>\n'
            for label, target in links
        )
        title = f"{self.label}{path} v{version}"
        return f"<html><head><title>{title}</title></head><body>\n{anchors}</body></html>\n"


class Site:
    """The hosts of a site, serving; :meth:`stop` shuts every server down."""

    def __init__(self, hosts: dict[str, HostSpec]) -> None:
        self._lock = threading.Lock()
        self._log: list[Request] = []
        self.hosts = {label: _Host(self, label, spec) for label, spec in hosts.items()}
        for host in self.hosts.values():
            host.thread.start()

    def url(self, label: str, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.hosts[label].port}{path}"

    def key(self, label: str) -> str:
        """The host's politeness key (its limit key in the store)."""
        return f"127.0.0.1:{self.hosts[label].port}"

    def record(self, request: Request) -> None:
        with self._lock:
            self._log.append(request)

    def requests(self, label: str | None = None) -> list[Request]:
        """Every request answered so far (of one host), in order of their end."""
        with self._lock:
            return [r for r in self._log if label is None or r.host == label]

    def change(self, label: str, path: str, *, link: Target | None = None) -> None:
        """A new version of a page (another content and validator), with one
        more link if given."""
        host = self.hosts[label]
        with host.lock:
            host.versions[path] += 1
            if link is not None:
                host.extra.setdefault(path, []).append(link)

    def stop(self) -> None:
        for host in self.hosts.values():
            host.server.shutdown()
            host.server.server_close()


@contextmanager
def serving(hosts: dict[str, HostSpec]) -> Iterator[Site]:
    """A site that is stopped when the block ends, whatever happens in it."""
    site = Site(hosts)
    try:
        yield site
    finally:
        site.stop()
