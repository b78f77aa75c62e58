"""rota.crawl.scrapy with real Scrapy processes (``scrapy runspider`` of
tests/integration/apps/scrapy_site.py) sharing one frontier in a real
store, against the local test site (tests/crawl_site.py), which logs
every request it answers.

From the servers' logs: every page is fetched exactly once across the
processes, both processes fetched pages, and no host ever had more
requests at once than the per-host limit, nor more a second than its
rate. From the store: every request's job succeeded. A process killed
while it holds requests loses them only until their leases run out:
another process fetches them. Every claimed request's job ends as Scrapy
left the request: a 404 with its status, a callback that raised failed
with its error, a refused connection failed after Scrapy's retries (each
retry a job that ends the one before), nothing left running.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from backends import drop_store, store_url
from crawl_site import HostSpec, Request, Site, serving
from helpers import held_by
from procs import Processes
from rota.models import Job, JobQuery, JobState
from rota.stores import Store, open_store

SPIDER = str(Path(__file__).parent / "apps" / "scrapy_site.py")
SCRAPY = str(Path(sys.executable).with_name("scrapy"))
PER_HOST = 2
RATE = 10.0  # requests of a host a second, burst 1: a crawl of 3 s or more
#: Seconds the server may see two requests closer than their claims were.
JITTER = 0.2
QUEUE = "scrapy-site"


def tree(label: str, n: int) -> dict[str, list[tuple[str, str]]]:
    """``/`` links to /p0../p2; /pi links to /p(2i+3), /p(2i+4) and back to /."""
    pages: dict[str, list[tuple[str, str]]] = {"/": [(label, f"/p{i}") for i in range(3)]}
    for i in range(n):
        kids = [(label, f"/p{j}") for j in (2 * i + 3, 2 * i + 4) if j < n]
        pages[f"/p{i}"] = [*kids, (label, "/")]
    return pages


def site_hosts(delay: float = 0.05) -> dict[str, HostSpec]:
    return {
        "a": HostSpec(tree("a", 30), delay=delay),
        "b": HostSpec(tree("b", 30), delay=delay),
        "c": HostSpec(tree("c", 15), delay=delay),
    }


@pytest.fixture(params=["sqlite", "redis"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    value = store_url(str(request.param), tmp_path)
    yield value
    drop_store(str(request.param), value)


@pytest.fixture
def store(url: str) -> Iterator[Store]:
    opened = open_store(url)
    yield opened
    opened.close()


def spider(
    processes: Processes, url: str, site: Site, fetched: Path, **env: str
) -> subprocess.Popen[bytes]:
    """Start ``scrapy runspider`` of the test spider on the site's hosts."""
    seeds = " ".join(site.url(label) for label in site.hosts)
    values = {
        "ROTA_URL": url,
        "SEEDS": seeds,
        "FETCHED": str(fetched),
        "PER_HOST": str(PER_HOST),
        "RATE": f"{RATE:g}/s",
        **env,
    }
    return processes.command(SCRAPY, "runspider", SPIDER, env=values)


def max_overlap(requests: list[Request]) -> int:
    """The most requests the server was answering at one instant."""
    edges = sorted([(r.start, 1) for r in requests] + [(r.end, -1) for r in requests])
    now = peak = 0
    for _, step in edges:  # an end sorts before a start at the same instant
        now += step
        peak = max(peak, now)
    return peak


def worst_window(starts: list[float]) -> float:
    """How far the busiest window of ``starts`` goes past :data:`RATE` a
    second, burst 1 (allowing :data:`JITTER`): <= 0 when the rate held."""
    starts = sorted(starts)
    worst = -float("inf")
    for i in range(len(starts)):
        for j in range(i + 1, len(starts)):
            allowed = RATE * (starts[j] - starts[i] + JITTER) + 1
            worst = max(worst, (j - i + 1) - allowed)
    return worst


def jobs(store: Store) -> list[Job]:
    return list(store.list_jobs(JobQuery(queue=QUEUE), limit=1000).jobs)


def test_two_scrapy_processes_share_one_polite_frontier(
    processes: Processes, url: str, store: Store, tmp_path: Path
) -> None:
    fetched = tmp_path / "fetched.txt"
    with serving(site_hosts(delay=0.25)) as site:  # answers overlap at the rate: the limit binds
        pages = {(label, path) for label, host in site.hosts.items() for path in host.spec.pages}
        # each process runs at most half of the 6 requests the hosts allow at
        # once, so the one that comes second finds free slots when its engine
        # next asks (an idle Scrapy engine asks every few seconds, a busy one
        # as each answer comes: uncapped, the first could keep all six)
        half = str(PER_HOST * len(site.hosts) // 2)
        crawlers = [spider(processes, url, site, fetched, CONCURRENT=half) for _ in range(2)]
        for proc in crawlers:
            assert proc.wait(60) == 0, processes.output(proc)
        asked = Counter((r.host, r.path) for r in site.requests())
        assert set(asked) == pages
        assert [page for page, n in asked.items() if n > 1] == []
        peaks = [max_overlap(site.requests(label)) for label in site.hosts]
        assert max(peaks) == PER_HOST, peaks  # the limit, not a lack of work, held them
        for label in site.hosts:
            assert worst_window([r.start for r in site.requests(label)]) <= 0, label
    by_pid = Counter(line.split()[1] for line in fetched.read_text().splitlines())
    assert sorted(by_pid) == sorted(str(p.pid) for p in crawlers)
    assert sum(by_pid.values()) == len(pages)
    states = Counter(job.state for job in jobs(store))
    assert states == {JobState.SUCCEEDED: len(pages)}


def test_a_killed_process_loses_its_requests_to_another(
    processes: Processes, url: str, store: Store, tmp_path: Path
) -> None:
    fetched = tmp_path / "fetched.txt"
    with serving(site_hosts(delay=0.1)) as site:
        pages = {(label, path) for label, host in site.hosts.items() for path in host.spec.pages}
        first = spider(processes, url, site, fetched, LEASE="2")
        processes.kill_while(first, lambda: held_by(store, first.pid), timeout=30)
        assert not fetched.exists() or len(fetched.read_text().splitlines()) < len(pages)
        second = spider(processes, url, site, fetched, LEASE="2")
        assert second.wait(90) == 0, processes.output(second)
        asked = {(r.host, r.path) for r in site.requests()}
    assert asked == pages
    states = Counter(job.state for job in jobs(store))
    assert states == {JobState.SUCCEEDED: len(pages)}
    lost = [job for job in jobs(store) if any(h["event"] == "lost" for h in job.history)]
    assert lost, "the killed process held requests that came back"


def test_every_claimed_request_ends_as_scrapy_left_it(
    processes: Processes, url: str, store: Store, tmp_path: Path
) -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there: connections are refused
    pages = {
        "/": [("a", "/p1"), ("a", "/missing"), ("a", "/boom")],
        "/p1": [("a", "/")],
        "/boom": [],
    }
    with serving({"a": HostSpec(pages)}) as site:
        refused = f"http://127.0.0.1:{port}/x"
        proc = processes.command(
            SCRAPY,
            "runspider",
            SPIDER,
            env={"ROTA_URL": url, "SEEDS": f"{site.url('a')} {refused}", "FETCHED": "/dev/null"},
        )
        assert proc.wait(60) == 0, processes.output(proc)
        ends = [(job.args[0]["url"], job.state, job.result or job.error) for job in jobs(store)]
    page, missing = site.url("a", "/"), site.url("a", "/missing")
    assert (page, JobState.SUCCEEDED, {"url": page, "status": 200}) in ends
    assert (missing, JobState.SUCCEEDED, {"url": missing, "status": 404}) in ends
    boom = site.url("a", "/boom")
    assert (boom, JobState.FAILED, f"RuntimeError: cannot parse {boom}") in ends
    tries = sorted((state, str(text)) for u, state, text in ends if u == refused)
    # Scrapy's RetryMiddleware tries twice more: each try is a job, which ends the one before
    assert [state for state, _ in tries] == [JobState.FAILED] + [JobState.SUCCEEDED] * 2
    assert "ConnectionRefused" in tries[0][1]
    assert tries[1][1] == str({"followed_by": refused})
    assert len(ends) == 4 + 3
    assert store.list_jobs(JobQuery(queue=QUEUE, state=JobState.RUNNING)).jobs == ()


def test_a_store_that_cannot_be_reached_fails_the_start(
    processes: Processes, tmp_path: Path
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    # nothing listens there; retry_for=1: the store gives up after a second
    url = f"redis://127.0.0.1:{port}/0?retry_for=1"
    proc = processes.command(
        SCRAPY,
        "runspider",
        SPIDER,
        env={"ROTA_URL": url, "SEEDS": "http://127.0.0.1:9/", "FETCHED": str(tmp_path / "f")},
    )
    assert proc.wait(60) == 1, processes.output(proc)
    assert "cannot be reached" in processes.output(proc)


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("ROTA_PER_HOST=abc", "ROTA_PER_HOST must be an integer, not 'abc'"),
        ("ROTA_LEASE=soon", "ROTA_LEASE 'soon' is not a duration"),
        ("ROTA_NAME=a b", "ROTA_NAME must not contain '/' or spaces: 'a b'"),
        ("ROTA_QUEUE=", "ROTA_QUEUE must be a non-empty string, not ''"),
    ],
)
def test_a_bad_rota_setting_given_with_s_stops_the_crawl_naming_it(
    tmp_path: Path, setting: str, message: str
) -> None:
    database = tmp_path / "rota.db"
    env = os.environ | {"ROTA_URL": f"sqlite:///{database}", "SEEDS": "http://127.0.0.1:9/"}
    done = subprocess.run(
        [SCRAPY, "runspider", SPIDER, "-s", setting],
        env=env | {"FETCHED": str(tmp_path / "fetched")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"rota.errors.InvalidArgument: {message}"), done.stderr
    assert "Engine slot not assigned" not in done.stderr
    assert "Spider opened" not in done.stderr, "refused before the spider opens"
    assert not database.exists(), "the store was never opened"
