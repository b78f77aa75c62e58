"""A finished small crawl for the crawl page's tests: a real ``rota worker``
process ran tests/integration/apps/crawling.py over a local site
(tests/crawl_site.py) whose servers logged every request.

The site's hosts:

- ``a``: a tree of pages; robots.txt disallows ``/private/`` (rules in force);
- ``b``: no robots.txt (404); one link to a missing page (a 404 answer);
  its 3rd page request is answered 429 with ``Retry-After: 1`` (a pause);
- ``c``: robots.txt disallows everything: nothing of it is fetched;
- ``dead``: a seed on a port nothing listens on: its robots.txt cannot be
  fetched (connection refused), so its pages wait.
"""

from __future__ import annotations

import importlib.util
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from crawl_site import HostSpec, Request, Site, serving
from helpers import wait_for
from procs import Processes
from rota.models import JobQuery, JobState
from rota.stores import Store, open_store
from web.support import free_port

APP_FILE = Path(__file__).parent.parent / "integration" / "apps" / "crawling.py"


def site_hosts() -> dict[str, HostSpec]:
    """The hosts described in the module's docstring."""
    a_pages = {"/": [("a", "/p1"), ("a", "/p2"), ("a", "/private/x")], "/private/x": []}
    a_pages |= {"/p1": [("a", "/p3"), ("a", "/")], "/p2": [("a", "/p4")], "/p3": [], "/p4": []}
    b_pages = {"/": [("b", "/q1"), ("b", "/q2"), ("b", "/gone")], "/q1": [("b", "/q3")]}
    b_pages |= {"/q2": [], "/q3": []}
    return {
        "a": HostSpec(a_pages, robots=[(200, "User-agent: *\nDisallow: /private/\n")]),
        "b": HostSpec(b_pages, throttle=frozenset({3}), retry_after=1),
        "c": HostSpec({"/": []}, robots=[(200, "User-agent: *\nDisallow: /\n")]),
    }


@dataclass
class Crawled:
    """The crawl's site (stopped; its log kept), app and store."""

    site: Site
    log: list[Request]
    module: ModuleType
    store: Store
    dead: str  # the dead seed's host key

    def pages(self, label: str) -> list[Request]:
        """The host's page requests as its server answered them."""
        return [r for r in self.log if r.host == label and r.path != "/robots.txt"]


def load_app(env: dict[str, str]) -> ModuleType:
    """The workers' app module, loaded here with the same environment."""
    spec = importlib.util.spec_from_file_location(
        f"rota_test_crawl_page_{time.monotonic_ns()}", APP_FILE
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        spec.loader.exec_module(module)
    return module


#: The pages the crawl fetches (robots.txt allows them; all in scope).
EXPECTED = {("a", p) for p in ("/", "/p1", "/p2", "/p3", "/p4")}
EXPECTED |= {("b", p) for p in ("/", "/q1", "/q2", "/q3", "/gone")}


def _fetches(store: Store, state: JobState) -> int:
    page = store.list_jobs(JobQuery(task="site.fetch", state=state), limit=1)
    return len(page.jobs)


def _done(site: Site, store: Store) -> bool:
    """Every page answered (not 429), no fetch job left to run, robots.txt
    read for the three live hosts and failed once for the dead one."""
    answered = {(r.host, r.path) for r in site.requests() if r.status != 429}
    if not EXPECTED.issubset(answered):
        return False
    waiting = (JobState.QUEUED, JobState.SCHEDULED, JobState.RUNNING)
    if any(_fetches(store, state) for state in waiting):
        return False
    robots = store.list_jobs(JobQuery(task="site.robots"), limit=10).jobs
    read = [j for j in robots if j.state is JobState.SUCCEEDED]
    tried = [j for j in robots if any(h.get("event") == "failed" for h in j.history)]
    return len(read) == 3 and len(tried) == 1


@contextmanager
def crawled(url: str, workdir: Path) -> Iterator[Crawled]:
    """Run the crawl to its end with one worker, stop the worker, and yield it."""
    processes = Processes(workdir)
    dead_port = free_port()
    with serving(site_hosts()) as site:
        seeds = [site.url(label) for label in ("a", "b", "c")]
        seeds.append(f"http://127.0.0.1:{dead_port}/")
        parsed = workdir / "parsed.log"
        env = {"ROTA_TEST_SEEDS": json.dumps(seeds), "ROTA_TEST_PARSED": str(parsed)}
        module = load_app(env)
        module.app.configure(url=url)
        store = open_store(url)
        try:
            args = ["worker", f"{APP_FILE}:app", "--url", url, "--queues", "crawl"]
            processes.rota(*args, "--concurrency", "8", "--log-level", "WARNING", env=env)
            wait_for(lambda: store.workers(), timeout=30, what="the worker up")
            module.crawler.start()
            wait_for(lambda: _done(site, store), timeout=60, interval=0.1, what="the crawl to end")
            processes.stop_all()
            yield Crawled(site, site.requests(), module, store, f"127.0.0.1:{dead_port}")
        finally:
            processes.stop_all()
            module.app.close()
            store.close()
