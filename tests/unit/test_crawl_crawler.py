"""The Crawler API: declaring a crawl (bad input refused, nothing
registered), and a small crawl run by an in-process worker against a
loopback site: items as results, links followed once, callbacks by URL,
a failing callback not retried."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import httpx
import pytest

import rota.testing
from crawl_site import HostSpec, Site, Target, serving
from rota import App, Breaker, Snooze, export
from rota.crawl import Adaptive, Crawler, Link, Response, TryLater
from rota.errors import InvalidArgument, JobTimeout
from rota.models import JobQuery, JobState
from rota.testing import run_until_idle

TREE = {
    "/": [("a", "/menu"), ("a", "/about"), ("a", "/private/kitchen")],
    "/menu": [("a", "/menu/soup"), ("a", "/menu/tea"), ("a", "/")],
    "/menu/soup": [("a", "/menu/tea")],
    "/menu/tea": [("a", "/menu/soup"), ("b", "/")],
    "/about": [("a", "/about/deep")],
    "/about/deep": [("a", "/about/deeper")],
    "/about/deeper": [],
    "/private/kitchen": [],
}


@pytest.fixture
def site() -> Iterator[Site]:
    hosts = {
        "a": HostSpec(TREE, robots=[(200, "User-agent: *\nDisallow: /private/\n")]),
        "b": HostSpec({"/": []}),  # not a seed: outside the crawl
    }
    with serving(hosts) as serving_site:
        yield serving_site


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    value = App(f"sqlite:///{tmp_path / 'rota.db'}")
    yield value
    value.close()


def results(app: App, task: str) -> list[dict[str, Any]]:
    return [job.result for job in app.store.iter_results(task=task)]


def test_a_crawl_keeps_items_as_results_and_fetches_each_page_once(app: App, site: Site) -> None:
    crawler = Crawler(app, "cafe", seeds=[site.url("a")], max_depth=2, rate=100)
    seen: list[str] = []

    @crawler.parse
    def page(response: Response) -> Iterator[dict[str, Any] | Link | None]:
        seen.append(response.url)
        title = response.css_first("title")
        yield {"url": response.url, "title": title.text() if title else None}
        yield from response.links()
        yield response.follow("mailto:chef@example.com")  # None: ignored

    crawler.start()
    crawler.start()  # again: the seed is a duplicate
    summary = run_until_idle(app, timeout=30)

    assert summary.failed == 0
    paths = Counter(r.path for r in site.requests("a"))
    expected = ["/robots.txt", "/", "/menu", "/about", "/menu/soup", "/menu/tea", "/about/deep"]
    assert paths == Counter(expected), "each once; /about/deeper is 3 links deep"
    assert site.requests("b") == [], "a host that is not a seed's is outside the crawl"
    assert sorted(seen) == sorted(site.url("a", p) for p in paths if p != "/robots.txt")
    by_url = {r["url"]: r for r in results(app, "cafe.fetch")}
    home = by_url[site.url("a")]
    assert home["items"] == [{"url": site.url("a"), "title": "a/ v1"}]
    assert home["depth"] == 0 and home["status"] == 200 and home["changed"] is True
    assert home["links"] == 2, "the disallowed link is not sent"
    assert home["etag"] == '"a/-v1"' and len(home["hash"]) == 32
    assert by_url[site.url("a", "/about/deep")]["links"] == 0, "/about/deeper is at depth 3"
    rows = "".join(export.lines("jsonl", app.store.iter_results(task="cafe.fetch")))
    assert rows.count("\n") == 6 and '"title":"a/menu v1"' in rows


def test_pages_wait_for_a_robots_txt_that_cannot_be_read_without_using_their_retries(
    app: App,
) -> None:
    # robots.txt is read, then, once its one-second TTL is over, answers 503:
    # the page being fetched then waits for its next read, though the crawl
    # gives a fetch no retry (a snooze is no attempt)
    chain = {f"/{i}": [("a", f"/{i + 1}")] for i in range(8)} | {"/": [("a", "/0")], "/8": []}
    robots = [(200, "User-agent: *\nAllow: /\n"), (503, ""), (200, "User-agent: *\nAllow: /\n")]
    with serving({"a": HostSpec(chain, robots=robots, delay=0.25)}) as site:
        crawler = Crawler(
            app, "slow", seeds=[site.url("a")], rate=1000, retries=0, robots_ttl=1, timeout=1
        )
        crawler.start()
        summary = run_until_idle(app, timeout=60)
        paths = [r.path for r in site.requests("a")]
    assert summary.failed == 1  # the robots.txt fetch that was refused, and no page
    assert paths.count("/robots.txt") >= 3, paths  # read, refused, read again
    assert sorted(r["url"] for r in results(app, "slow.fetch")) == sorted(
        site.url("a", path) for path in chain
    )


def test_a_robots_txt_that_gave_up_is_not_asked_again_for_a_minute() -> None:
    app = App()
    with serving({"a": HostSpec(TREE, robots=[(503, "")])}) as site:
        # a burst of four: the robots job's four attempts come back to back,
        # and at one token a millisecond a fast one would find none left
        crawler = Crawler(app, "down", seeds=[site.url("a")], rate=1000, burst=4)
        book = crawler._jobs.robots
        with rota.testing.inline(app):
            with pytest.raises(TryLater, match="its fetch failed") as first:
                book.rules(site.url("a").rstrip("/"))  # the robots job, its retries and all
            asked = len(site.requests("a"))
            for _ in range(5):  # pages that wake meanwhile
                with pytest.raises(TryLater, match="its fetch failed") as again:
                    book.rules(site.url("a").rstrip("/"))
            assert len(site.requests("a")) == asked == 4, "one job: its four attempts"
    assert isinstance(first.value, Snooze) and first.value.seconds >= 60.0
    assert isinstance(again.value, Snooze) and 50.0 <= again.value.seconds <= 90.0


def test_a_robots_txt_whose_fetch_gave_up_while_pages_waited_is_held_for_a_minute(
    app: App,
) -> None:
    # a real worker: pages see the robots job retried, then it fails; the
    # first page to wake after that must not send a new one at once
    with serving({"a": HostSpec(TREE, robots=[(503, "")])}) as site:
        crawler = Crawler(app, "down", seeds=[site.url("a")], rate=1000, timeout=1)
        book = crawler._jobs.robots
        assert book.task is not None
        book.task = book.task.options(retries=1, backoff=(2, 2))  # outlasts robots_wait (1 s)
        crawler.start()
        with contextlib.suppress(JobTimeout):  # the pages are still snoozing at the end
            run_until_idle(app, timeout=12)
        asked = [r.path for r in site.requests("a")]
    robots_jobs = app.store.list_jobs(JobQuery(task="down.robots")).jobs
    assert len(robots_jobs) == 1 and robots_jobs[0].state is JobState.FAILED
    assert asked == ["/robots.txt", "/robots.txt"], "one job, its two attempts, no page"


def test_a_fetch_of_a_host_paused_since_its_claim_snoozes_without_asking_it(site: Site) -> None:
    app = App()
    crawler = Crawler(app, "cafe", seeds=[site.url("a")], max_depth=0, rate=1000, burst=10)
    with rota.testing.inline(app):
        crawler.start()  # robots.txt and / read: this process knows the host
        asked = len(site.requests("a"))
        jobs = crawler._jobs
        host = site.key("a")
        assert not jobs.pacer.paused(host)
        jobs.pacer.throttle(host, 60.0)  # a 429 seen by another fetch of this process
        assert jobs.pacer.paused(host)
        with pytest.raises(TryLater, match="is paused") as waited:
            jobs.fetch(site.url("a", "/menu"))
    assert isinstance(waited.value, Snooze) and 1.0 <= waited.value.seconds <= 2.0
    assert len(site.requests("a")) == asked, "the paused host was not asked"


def test_a_seed_sent_first_by_a_deep_link_is_fetched_at_depth_0(site: Site) -> None:
    # A link from another host can send a seed before the seed's own admit job
    # (waiting for robots.txt) does; the seed's send is then a duplicate, and at
    # the link's depth max_depth would cut every page below it.
    app = App()
    crawler = Crawler(app, "cafe", seeds=[site.url("a")], max_depth=1, rate=1000, burst=10)
    with rota.testing.inline(app):  # what the fetch sends runs at once
        fetched = crawler._jobs.fetch(site.url("a"), 5)  # as a link 5 hops away sent it
    assert fetched["depth"] == 0
    assert fetched["links"] == 2, "/menu and /about, at depth 1 (/private/ is disallowed)"
    paths = Counter(r.path for r in site.requests("a"))
    assert paths["/menu"] == 1 and paths["/about"] == 1
    assert paths["/menu/soup"] == 0, "two hops from the seed: beyond max_depth"


def test_a_redirect_chain_stops_after_five_redirects_and_keeps_its_depth() -> None:
    # /chain/0 -> /chain/1 -> ... -> /chain/30 (a page): a link trap for a
    # crawler that follows every redirect; /old -> /new, a seed's one redirect
    chain = {f"/chain/{n}": f"/chain/{n + 1}" for n in range(30)}
    pages: dict[str, list[Target]] = {"/chain/30": [], "/new": [("a", "/next")], "/next": []}
    spec = HostSpec(pages, redirects=chain | {"/old": "/new"})
    app = App()
    with serving({"a": spec}) as site:
        seeds = [site.url("a", "/chain/0"), site.url("a", "/old")]
        crawler = Crawler(app, "trap", seeds=seeds, max_depth=0, rate=1000, burst=1000)
        with rota.testing.inline(app):
            crawler.start()
            by_url = {r["url"]: r for r in results(app, "trap.fetch")}
        paths = Counter(r.path for r in site.requests("a"))
    assert paths == Counter(["/robots.txt", "/old", "/new", *(f"/chain/{n}" for n in range(6))])
    assert by_url[site.url("a", "/new")]["depth"] == 0, "a redirect is no hop: max_depth=0 holds"
    assert by_url[site.url("a", "/new")]["links"] == 0, "/next is one hop from the seed"
    assert [by_url[site.url("a", f"/chain/{n}")]["depth"] for n in range(6)] == [0] * 6
    last = by_url[site.url("a", "/chain/5")]
    assert last["redirects"] == 6 and last["links"] == 0
    assert last["not_followed"] == "more than 5 redirects"


def test_a_redirect_chain_stops_at_the_same_page_in_every_recrawl() -> None:
    # /r1 -> /r2 -> ... -> /r8: /r6 is reached by five redirects, and its own
    # redirect (the sixth) is not followed, in the first round nor in the next
    chain = {f"/r{n}": f"/r{n + 1}" for n in range(1, 8)}
    app = App()
    with serving({"a": HostSpec({"/r8": []}, redirects=chain)}) as site:
        seeds = [site.url("a", "/r1")]
        crawler = Crawler(app, "trap", seeds=seeds, recrawl="1h", rate=1000, burst=1000)
        with rota.testing.inline(app):
            crawler.start()
            for _ in range(2):  # two more rounds: each recrawl job run now, not in an hour
                due = [j for j in _jobs(app, "trap.recrawl") if j.state is JobState.SCHEDULED]
                assert len(due) == 6
                for job in due:
                    crawler._jobs.recrawl(*job.args)
                    app.store.delete([job.id])
        paths = Counter(r.path for r in site.requests("a"))
    assert paths == Counter({"/robots.txt": 1} | {f"/r{n}": 3 for n in range(1, 7)})


def test_a_redirect_that_is_not_followed_says_why() -> None:
    redirects = {"/ftp": "ftp://files.example/menu.txt", "/away": "http://elsewhere.example/"}
    app = App()
    with serving({"a": HostSpec({}, redirects=redirects)}) as site:
        seeds = [site.url("a", "/ftp"), site.url("a", "/away")]
        crawler = Crawler(app, "out", seeds=seeds, rate=1000, burst=1000)
        with rota.testing.inline(app):
            crawler.start()
            by_url = {r["url"]: r for r in results(app, "out.fetch")}
    ftp, away = by_url[seeds[0]], by_url[seeds[1]]
    assert ftp["redirect"] == "ftp://files.example/menu.txt" and ftp["links"] == 0
    assert ftp["not_followed"] == "not an http(s) URL the crawl can fetch"
    assert away["redirect"] == "http://elsewhere.example/" and away["links"] == 0
    assert away["not_followed"] == "its host is outside the crawl"


@pytest.mark.parametrize(
    ("status", "retry_after", "pause"),
    [(429, "10", 10.0), (503, "86400", 30.0)],  # a day asked, cut to max_pause
)
def test_a_robots_txt_answered_with_retry_after_pauses_its_host_as_a_page_does(
    monkeypatch: pytest.MonkeyPatch, status: int, retry_after: str, pause: float
) -> None:
    asked: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        return httpx.Response(status, headers={"Retry-After": retry_after})

    app = App()
    host, seed = "busy.example", "http://busy.example/"
    crawler = Crawler(app, "busy", seeds=[seed], rate=1000, burst=4, adapt=Adaptive(max_pause=30))
    client = httpx.Client(transport=httpx.MockTransport(answer))
    monkeypatch.setattr(crawler._jobs.clients, "get", lambda: client)
    with rota.testing.inline(app) as runner:
        now = app.store.now()
        with pytest.raises(TryLater, match=r"robots\.txt of http://busy\.example is not read yet"):
            crawler._jobs.robots.rules("http://busy.example")
        assert asked == ["/robots.txt"], "its retry waits for the pause, held by the store"
        assert [i.override for i in app.store.limits() if i.key == host] == [0]
        [resume] = [j for j in _jobs(app, "busy.resume") if j.state is JobState.SCHEDULED]
        assert resume.run_at == pytest.approx(now + pause, abs=1.0)
        [robots] = _jobs(app, "busy.robots")
        assert robots.attempt == 1 and f"{host} is paused for {pause:.1f} s" in str(robots.error)
        crawler._jobs.pacer.resume(host, 2)  # what the resume job does when the pause is over
        runner.run_pending()
    assert asked == ["/robots.txt", "/robots.txt"], "asked again once the pause is over"


def test_a_crawl_delay_allows_no_burst_even_when_the_crawlers_rate_is_slower() -> None:
    # Crawl-delay: 0.3 is faster than the crawler's rate (one a minute here, so
    # no token comes back during the test), yet no two requests may be closer
    # than 0.3 s: the burst of 4 must not apply (it let three go out at once)
    pages: dict[str, list[Target]] = {"/": [("a", f"/{n}") for n in range(3)]}
    pages |= {f"/{n}": [] for n in range(3)}
    robots = [(200, "User-agent: *\nCrawl-delay: 0.3\n")]
    app = App()
    with serving({"a": HostSpec(pages, robots=robots)}) as site:
        crawler = Crawler(app, "delayed", seeds=[site.url("a")], rate="1/m", burst=4)
        with rota.testing.inline(app):  # a fetch the rate holds stays queued
            crawler.start()
            [info] = [i for i in app.store.limits() if i.key == site.key("a")]
        paths = [r.path for r in site.requests("a")]
    assert paths == ["/robots.txt", "/"], "the rate's one token, then no burst"
    assert (info.rate, info.burst) == (pytest.approx(1 / 60), 1)


@pytest.mark.alone  # it times requests to a fifth of a second: run with no other test
def test_a_crawl_delay_is_a_minimum_gap_whatever_the_burst(app: App) -> None:
    # rate 50/s with bursts of 5, but robots.txt asks for 0.5 s between requests
    pages: dict[str, list[Target]] = {"/": [("a", f"/{n}") for n in range(5)]}
    pages |= {f"/{n}": [] for n in range(5)}
    robots = [(200, "User-agent: *\nCrawl-delay: 0.5\n")]
    with serving({"a": HostSpec(pages, robots=robots)}) as site:
        crawler = Crawler(app, "delayed", seeds=[site.url("a")], rate="50/s", burst=5)
        crawler.start()
        summary = run_until_idle(app, timeout=60)
        starts = sorted(r.start for r in site.requests("a") if r.path != "/robots.txt")
    assert summary.failed == 0 and len(starts) == 6
    # the pages' fetches start 0.5 s apart by the store's clock (their claims)...
    claimed = sorted(job.started_at or 0.0 for job in app.store.iter_results(task="delayed.fetch"))
    assert len(claimed) == 6
    gaps = [later - earlier for earlier, later in pairwise(claimed)]
    assert min(gaps) >= 0.49, gaps
    # ...and reach the site as far apart, give or take the time from a claim
    # to its request (a loaded machine delays one more than the next)
    assert starts[-1] - starts[0] >= 5 * 0.5 - 0.2, starts


def test_callbacks_run_by_url_in_order_and_a_crawler_without_any_follows_every_link(
    app: App, site: Site
) -> None:
    crawler = Crawler(app, "cafe", seeds=[site.url("a")], rate=100)
    order: list[tuple[str, str]] = []

    @crawler.parse(match=r"/menu/")
    def dish(response: Response) -> dict[str, Any]:
        order.append((response.url, "dish"))
        return {"dish": response.url.rsplit("/", 1)[1]}

    @crawler.parse
    def links(response: Response) -> list[Link]:
        order.append((response.url, "links"))
        return response.links()

    crawler.start()
    run_until_idle(app, timeout=30)
    items = sorted(item["dish"] for r in results(app, "cafe.fetch") for item in r["items"])
    assert items == ["soup", "tea"]
    dishes = [url for url, name in order if name == "dish"]
    assert len(dishes) == 2
    assert all(order.index((url, "dish")) < order.index((url, "links")) for url in dishes)

    other = App(f"sqlite:///{Path(app.url.removeprefix('sqlite:///')).parent / 'b.db'}")
    plain = Crawler(other, "plain", seeds=[site.url("a")], rate=100)
    plain.start()
    run_until_idle(other, timeout=30)
    fetched = {r["url"] for r in results(other, "plain.fetch")}
    assert site.url("a", "/about/deeper") in fetched, "every link, at any depth"
    assert all(r["items"] == [] for r in results(other, "plain.fetch"))
    other.close()


def test_a_failing_callback_fails_its_page_without_retries(app: App, site: Site) -> None:
    crawler = Crawler(app, "cafe", seeds=[site.url("a")], rate=100, retries=3)

    @crawler.parse
    def broken(response: Response) -> object:
        if response.url.endswith("/"):
            return [response.links(), 42]  # a list of links is not a Link
        return None

    [admit] = crawler.start()
    run_until_idle(app, timeout=30)
    failed = [j for j in _jobs(app, "cafe.fetch") if j.state is JobState.FAILED]
    assert len(failed) == 1 and failed[0].attempt == 1, "not retried"
    assert "parse callback" in (failed[0].error or "") and "broken" in (failed[0].error or "")
    assert "ParseFailed" in (failed[0].error or "")
    assert admit.status() == "succeeded"


def test_parse_errors_do_not_count_in_the_hosts_breaker(app: App, site: Site) -> None:
    crawler = Crawler(
        app, "cafe", seeds=[site.url("a")], rate=100, per_host=1, breaker=Breaker(1, "5m")
    )

    @crawler.parse
    def broken(response: Response) -> object:
        if response.url.endswith("/"):
            return response.links()
        raise KeyError("price")  # a bug of the crawl's, on a page the host served

    crawler.start()
    run_until_idle(app, timeout=30)
    failed = [j for j in _jobs(app, "cafe.fetch") if j.state is JobState.FAILED]
    # a breaker of 1 failure would have held every page after the first
    assert len(failed) == 2, [j.args for j in failed]  # /menu and /about
    (info,) = [i for i in app.limits.list() if i.key == site.key("a")]
    assert (info.failures, info.open_until) == (0, None)


def _jobs(app: App, task: str) -> list[Any]:
    return list(app.store.list_jobs(JobQuery(task=task), limit=100).jobs)


def test_the_crawler_registers_its_tasks_and_its_worker_hooks(app: App) -> None:
    crawler = Crawler(app, "news", seeds="https://news.example/")
    assert {"news.fetch", "news.admit", "news.recrawl", "news.robots", "news.resume"} <= set(
        app.tasks
    )
    assert crawler.fetch_task is app.tasks["news.fetch"]
    assert crawler.name == "news" and crawler.settings.seeds == ("https://news.example/",)
    assert len(app._on_start) == 1 and len(app._on_stop) == 1
    fetch = app.tasks["news.fetch"].opts
    assert fetch.queue == "crawl" and fetch.retries == 5 and fetch.unique is not None
    assert app.tasks["news.robots"].opts.priority > app.tasks["news.admit"].opts.priority
    assert app.tasks["news.admit"].opts.priority > fetch.priority
    with pytest.raises(InvalidArgument, match=r"already has a task named 'news\.fetch'"):
        Crawler(app, "news", seeds="https://news.example/")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"seeds": ["news.example"]}, "a seed must be an absolute http.s. URL, not 'news.example'"),
        ({"seeds": ["ftp://news.example/"]}, "a seed must be an absolute http"),
        ({"seeds": ["http://exa mple.com/"]}, "a seed must be an absolute http.*'http://exa mple"),
        (
            {"seeds": ["https://news.example/" + "a" * 3000]},
            r"a seed must be at most 2048 characters long \(MAX_URL_LENGTH\), not 3021: "
            r"'https://news\.example/a+\.\.\.$",
        ),
        ({"seeds": None}, "seeds takes an absolute http.s. URL or a list of them, not NoneType"),
        ({"seeds": 5}, "seeds takes an absolute http.s. URL or a list of them, not int 5"),
        ({"seeds": b"https://news.example/"}, "seeds takes an absolute http.s. URL or a list"),
        ({"per_host": 0}, "per_host must be at least 1"),
        ({"per_host": "2"}, "per_host must be an integer"),
        ({"rate": "fast"}, "rate 'fast' is not valid"),
        ({"burst": 0}, "rate burst must be at least 1"),
        ({"max_depth": -1}, "max_depth must be a non-negative integer"),
        ({"recrawl": "soon"}, "recrawl 'soon' is not a duration"),
        ({"recrawl": 0}, "recrawl must be above 0"),
        ({"queue": ""}, "queue must be a non-empty string"),
        ({"breaker": Breaker(5, 60, key="x")}, "breaker takes rota.Breaker"),
        ({"per_host": 8, "breaker": Breaker(3, 60)}, r"breaker failures \(3\) must be at least"),
        ({"robots_ttl": "30d"}, r"robots_ttl .* must not be longer than the app's retention"),
        ({"adapt": "yes"}, "adapt takes True, False or rota.crawl.Adaptive"),
        ({"user_agent": " "}, "user_agent must be a non-empty string"),
        ({"user_agent": "bad\nua"}, r"user_agent must be printable ASCII .* has '\\n'"),
        ({"user_agent": "bot/1\r\n"}, r"without control characters such as CR or LF: .* '\\r'"),
        ({"user_agent": "bot\x00"}, r"user_agent must be printable ASCII .* has '\\x00'"),
        ({"user_agent": "bot\t1"}, r"user_agent must be printable ASCII .* has '\\t'"),
        ({"user_agent": "caf\u00e9-bot"}, r"user_agent must be printable ASCII .* has '\u00e9'"),
        ({"allow": ["("]}, "allow pattern"),
        ({"timeout": -1}, "timeout must not be negative"),
        ({"max_bytes": 0}, "max_bytes must be at least 1"),
    ],
)
def test_bad_settings_are_refused_and_register_nothing(
    app: App, kwargs: dict[str, Any], message: str
) -> None:
    settings = {"seeds": ["https://news.example/"]} | kwargs
    with pytest.raises(InvalidArgument, match=message):
        Crawler(app, "news", **settings)
    assert app.tasks == {} and app._on_start == []


def test_a_user_agent_is_any_printable_ascii_without_surrounding_spaces(app: App) -> None:
    agent = "ShopBot/2.1 (+https://shop.example/bot; ops@shop.example) [a~z]"
    crawler = Crawler(app, "shop", seeds="https://shop.example/", user_agent=f"  {agent} ")
    assert crawler.settings.user_agent == agent
    assert crawler.settings.agent == "ShopBot", "its product token, for robots.txt"


def test_bad_names_parse_callbacks_and_start_urls_are_refused(app: App) -> None:
    for name in ("my site", "my/site"):
        with pytest.raises(
            InvalidArgument, match=f"^crawler name must not contain '/' or spaces: '{name}'$"
        ):
            Crawler(app, name)
    with pytest.raises(InvalidArgument, match=r"^crawler name must be a non-empty string, not ''$"):
        Crawler(app, "")
    with pytest.raises(
        InvalidArgument, match=r"^crawler name 'a+'\.\.\. is 193 characters; at most 192"
    ):
        Crawler(app, "a" * 193)
    with pytest.raises(InvalidArgument, match=r"a crawler needs a rota\.App"):
        Crawler("sqlite:///x.db", "site")  # type: ignore[arg-type]
    crawler = Crawler(app, "site", adapt=Adaptive(ramp_every=5))
    with pytest.raises(InvalidArgument, match="has no seeds"):
        crawler.start()
    with pytest.raises(InvalidArgument, match="match pattern '\\[' is not valid"):
        crawler.parse(match="[")
    with pytest.raises(InvalidArgument, match="parse takes a function"):
        crawler.parse(match="x")("not a function")  # type: ignore[type-var]
    with pytest.raises(InvalidArgument, match=r"urls takes an absolute http\(s\) URL or a list"):
        crawler.start(5)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match=r"not 'mailto:x@example\.com'"):
        crawler.start(["https://ok.example/", "mailto:x@example.com"])
    assert app.store.queues() == [], "nothing was sent"


def test_start_refuses_urls_whose_links_the_crawl_would_not_follow(app: App) -> None:
    crawler = Crawler(app, "news", seeds=["https://news.example/"])
    message = (
        r"urls: https://elsewhere\.example/a is outside crawl 'news': its host "
        r"elsewhere\.example is not a seed's, nor under domains=.*add a URL of the host to seeds="
    )
    with pytest.raises(InvalidArgument, match=message):
        crawler.start(["https://news.example/b", "https://elsewhere.example/a"])
    assert app.store.queues() == [], "nothing was sent"
    assert len(crawler.start(["https://news.example:443/b"])) == 1, "a seed's host: in scope"
    wide = Crawler(app, "wide", domains=["example.org"])
    assert len(wide.start(["https://www.example.org/"])) == 1, "under domains=: in scope"
    with pytest.raises(InvalidArgument, match="has no seeds: pass seeds= to Crawler"):
        wide.start()


def test_start_refuses_an_empty_list_of_urls_whatever_the_seeds(app: App) -> None:
    multi = Crawler(app, "multi", seeds=["https://news.example/", "https://blog.example/"])
    wide = Crawler(app, "wide", domains=["example.org"])
    given = r"^urls is empty: give start\(\) at least one URL of crawler '{}' to fetch"
    for crawler, rest in (
        (multi, r", or none at all \(start\(\)\) to send its seeds$"),
        (wide, "$"),
    ):
        for empty in ([], (), iter([])):
            with pytest.raises(InvalidArgument, match=given.format(crawler.name) + rest):
                crawler.start(empty)
    assert app.store.queues() == [], "nothing was sent"


def test_many_seeds_go_out_in_admit_jobs_of_at_most_500_urls_each(app: App) -> None:
    crawler = Crawler(app, "big", domains=["big.example", "other.example"])
    seeds = [f"https://big.example/item/{n}" for n in range(1200)]
    handles = crawler.start([*seeds, "https://other.example/"])
    jobs = [handle.job() for handle in handles]
    assert [(job.args[0], len(job.args[1])) for job in jobs] == [
        ("https://big.example", 500),
        ("https://big.example", 500),
        ("https://big.example", 200),
        ("https://other.example", 1),
    ]
    assert [url for job in jobs[:3] for url, depth in job.args[1]] == seeds


def test_a_crawl_runs_inline_in_the_calling_thread(site: Site) -> None:
    app = App()
    crawler = Crawler(app, "cafe", seeds=[site.url("a")], max_depth=1, rate=1000, burst=10)
    with rota.testing.inline(app):
        [admit] = crawler.start()
        assert admit.status() == "succeeded"
        fetched = sorted(r["url"] for r in results(app, "cafe.fetch"))
    assert fetched == sorted(site.url("a", p) for p in ("/", "/menu", "/about"))
    assert site.requests("a")[0].path == "/robots.txt"
