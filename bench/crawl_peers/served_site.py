"""The crawl bench's web site: HOSTS hosts (one loopback port each) of PAGES
pages, served by uvicorn from one process.

``/`` links to /p0../p(FANOUT-1); /pI links to its FANOUT children
/p(FANOUT*(I+1)).., back to ``/``, and to /pI of the next host, so every
page is reachable from any host's root and most are linked from two hosts.
Each page carries about 2 KB of text besides its links. robots.txt answers
404 (everything allowed).

The server counts what it answers. ``GET /_stats`` on any port returns,
as JSON, for all hosts: ``pages`` (distinct pages answered 200),
``fetches`` (page answers in all), ``first`` and ``last`` (epoch seconds of
the first and latest page answer) and ``total`` (pages the site has).

Run: ``python served_site.py --hosts 10 --pages 2000 --ports-file PATH``; it
writes the ports, one per line, to PATH once every host listens.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import uvicorn

FANOUT = 8
FILLER = " ".join(f"word{i % 97}" for i in range(300))

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class Site:
    """Every host's pages, and what was answered."""

    def __init__(self, hosts: int, pages: int) -> None:
        self.hosts, self.pages = hosts, pages
        self.ports: list[int] = []
        self.seen: set[tuple[int, str]] = set()
        self.fetches = 0
        self.first: float | None = None
        self.last: float | None = None

    def page(self, host: int, path: str) -> bytes | None:
        """The HTML of ``path`` on host number ``host``; None if there is none."""
        if path == "/":
            kids, links = range(min(FANOUT, self.pages)), []
        elif path.startswith("/p") and path[2:].isdigit() and int(path[2:]) < self.pages:
            i = int(path[2:])
            kids = range(FANOUT * (i + 1), min(FANOUT * (i + 2), self.pages))
            nxt = self.ports[(host + 1) % self.hosts]
            links = ["/", f"http://127.0.0.1:{nxt}/p{i}"]
        else:
            return None
        anchors = "".join(f'<a href="{href}">{href}</a>\n' for href in [*map(_path, kids), *links])
        title = f"host {host} {path}"
        head = f"<html><head><title>{title}</title></head>"
        return f"{head}<body><p>{FILLER}</p>\n{anchors}</body></html>".encode()

    def stats(self) -> dict[str, Any]:
        return {
            "pages": len(self.seen),
            "fetches": self.fetches,
            "first": self.first,
            "last": self.last,
            "total": self.hosts * (self.pages + 1),
        }

    def app(self, host: int) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
        """The ASGI application of host number ``host``."""

        async def serve(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                return
            path = scope["path"]
            if path == "/_stats":
                await _answer(send, 200, "application/json", json.dumps(self.stats()).encode())
                return
            body = self.page(host, path)
            if body is None:
                await _answer(send, 404, "text/plain", b"not found")
                return
            now = time.time()
            self.first = self.first or now
            self.last = now
            self.fetches += 1
            self.seen.add((host, path))
            await _answer(send, 200, "text/html; charset=utf-8", body)

        return serve


def _path(i: int) -> str:
    return f"/p{i}"


async def _answer(send: Send, status: int, kind: str, body: bytes) -> None:
    headers = [(b"content-type", kind.encode()), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def main(hosts: int, pages: int, ports_file: Path) -> None:
    site = Site(hosts, pages)
    servers = []
    for host in range(hosts):
        config = uvicorn.Config(
            site.app(host), host="127.0.0.1", port=0, log_level="warning", access_log=False,
            lifespan="off", loop="asyncio",
        )  # fmt: skip
        servers.append(uvicorn.Server(config))
    tasks = [asyncio.create_task(server.serve()) for server in servers]
    while not all(server.started for server in servers):
        failed = next((t for t in tasks if t.done()), None)
        if failed is not None:
            failed.result()  # raises what stopped it
            raise SystemExit("a host's server stopped before it started")
        await asyncio.sleep(0.01)
    site.ports = [s.servers[0].sockets[0].getsockname()[1] for s in servers]
    ports_file.write_text("".join(f"{port}\n" for port in site.ports))
    await asyncio.gather(*tasks)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=10)
    parser.add_argument("--pages", type=int, default=2_000, help="pages per host besides /")
    parser.add_argument("--ports-file", type=Path, required=True)
    args = parser.parse_args()
    asyncio.run(main(args.hosts, args.pages, args.ports_file))
