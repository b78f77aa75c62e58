"""Each host's level in the store (rota.crawl.pacing), moved by what one
process sees, and shown by ``rota limits list`` as the host key's override;
and the keys every fetch job carries."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from rota import App
from rota.cli import main
from rota.crawl import Adaptive, Crawler
from rota.crawl.jobs import NEVER
from rota.crawl.pacing import Pacer
from rota.crawl.robots import Rules
from rota.models import Job, JobQuery, JobState, Outcome

HOST = "shop.example:8080"


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    value = App(f"sqlite:///{tmp_path / 'rota.db'}")
    yield value
    value.close()


class Resumes:
    """The resume jobs a pacer asks for: (host, level, delay), and the rates."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, int, float]] = []
        self.rates: list[float | None] = []
        self.started: list[bool] = []

    def __call__(
        self, host: str, level: int, rate: float | None, delay: float, started: bool
    ) -> None:
        self.sent.append((host, level, delay))
        self.rates.append(rate)
        self.started.append(started)


def override(app: App, key: str = HOST) -> int | None:
    return next((i.override for i in app.store.limits() if i.key == key), None)


def rate_override(app: App, key: str = HOST) -> float | None:
    return next((i.rate_override for i in app.store.limits() if i.key == key), None)


def test_errors_halve_the_level_in_the_store_and_health_brings_it_back(app: App) -> None:
    pacer = Pacer(app, 4, Adaptive(ramp_every=2), Resumes())
    pacer.record(HOST, 500, 0.1)
    assert override(app) == 2
    pacer.record(HOST, None, 0.0)  # no answer at all
    assert override(app) == 1
    pacer.record(HOST, None, 0.0)
    assert override(app) == 1, "never below one"
    for expected in (1, 2, 2, 3, 3, None):  # None: back at the ceiling, no override
        pacer.record(HOST, 200, 0.1)
        assert override(app) == expected


def test_a_slowing_host_steps_down(app: App) -> None:
    pacer = Pacer(app, 4, Adaptive(ramp_every=100, slow_margin=0.2), Resumes())
    for _ in range(10):
        pacer.record(HOST, 200, 0.05)
    assert override(app) is None
    for _ in range(3):
        pacer.record(HOST, 200, 2.0)
    assert override(app) is not None and override(app) < 4


def test_a_throttle_pauses_the_host_and_asks_for_its_resume(app: App) -> None:
    resumes = Resumes()
    pacer = Pacer(app, 4, Adaptive(pause=5, max_pause=60), resumes)
    assert pacer.throttle(HOST, 12.0) == 12.0
    assert override(app) == 0, "the store holds every fetch of the host"
    assert resumes.sent == [(HOST, 2, 12.0)], "back at half its level after 12 s"
    assert pacer.throttle(HOST, None) == 10.0, "no Retry-After: 5 s, doubled for the 2nd"
    assert resumes.started == [True, False], "the second came during the pause"
    assert override(app) == 0
    pacer.record(HOST, 200, 0.1)
    assert override(app) == 0, "nothing but the resume lifts a pause"
    pacer.resume(HOST, 2)
    assert override(app) == 2
    pacer.resume(HOST, 9)
    assert override(app) is None, "never above the ceiling"


def test_the_rate_follows_the_level(app: App) -> None:
    resumes = Resumes()
    pacer = Pacer(app, 4, Adaptive(ramp_every=1), resumes)
    pacer.record(HOST, 500, 0.1)  # no rate known yet: only the level moves
    assert (override(app), rate_override(app)) == (2, None)
    pacer.record(HOST, 500, 0.1, rate=8.0)  # 8 a second at the ceiling of 4
    assert (override(app), rate_override(app)) == (1, 2.0)
    pacer.record(HOST, 200, 0.1, rate=8.0)
    assert (override(app), rate_override(app)) == (2, 4.0)
    pacer.throttle(HOST, 3.0, rate=8.0)
    assert override(app) == 0 and resumes.rates == [8.0], "the resume job knows the rate"
    pacer.resume(HOST, 1, 8.0)
    assert (override(app), rate_override(app)) == (1, 2.0)
    for _ in range(3):
        pacer.record(HOST, 200, 0.1, rate=8.0)
    assert (override(app), rate_override(app)) == (None, None), "the ceiling: the jobs' own"


def later(monkeypatch: pytest.MonkeyPatch, seconds: float = 1.1) -> None:
    """Move the pacers' clock on, past their trust in their copy of the levels."""
    then = time.monotonic() + seconds
    monkeypatch.setattr("rota.crawl.pacing.time.monotonic", lambda: then)


def test_a_host_cleared_by_hand_at_the_ceiling_gets_its_own_rate_back(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    pacer = Pacer(app, 2, Adaptive(ramp_every=5), Resumes())
    pacer.throttle(HOST, 1.0, rate=4.0)
    pacer.resume(HOST, 1, 4.0)  # back at level 1 of 2: half its rate
    assert (override(app), rate_override(app)) == (1, 2.0)
    app.admin.set_limit(HOST, 0)  # rota limits set HOST 0
    app.admin.clear_limit(HOST)  # rota limits clear HOST: the ceiling, level 2 of 2
    assert (override(app), rate_override(app)) == (None, 2.0)
    later(monkeypatch)
    pacer.record(HOST, 200, 0.1, rate=4.0)
    assert (override(app), rate_override(app)) == (None, None), "its own 4/s again"
    for _ in range(10):  # stays so: nothing more to write
        pacer.record(HOST, 200, 0.1, rate=4.0)
    assert (override(app), rate_override(app)) == (None, None)


def test_the_rate_follows_a_level_or_rate_set_by_hand_at_the_next_answer(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    pacer = Pacer(app, 4, Adaptive(ramp_every=100), Resumes())
    pacer.record(HOST, 200, 0.1, rate=8.0)
    assert (override(app), rate_override(app)) == (None, None)
    app.admin.set_limit(HOST, 1)  # rota limits set HOST 1
    pacer.record(HOST, 200, 0.1, rate=8.0)
    assert rate_override(app) is None, "seen at the next read of the store, within a second"
    later(monkeypatch)
    pacer.record(HOST, 200, 0.1, rate=8.0)
    assert (override(app), rate_override(app)) == (1, 2.0), "level 1 of 4: a quarter of 8/s"
    app.admin.set_rate(HOST, "5/s")  # the level decides the rate of a crawler's host
    later(monkeypatch, 2.2)
    pacer.record(HOST, 200, 0.1, rate=8.0)
    assert (override(app), rate_override(app)) == (1, 2.0)
    app.admin.set_limit(HOST, 0)  # a hold: the rate is left as it is
    later(monkeypatch, 3.3)
    pacer.record(HOST, 200, 0.1, rate=8.0)
    assert (override(app), rate_override(app)) == (0, 2.0)


def test_without_adaptation_the_rate_follows_the_level_too(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    pacer = Pacer(app, 2, None, Resumes())
    pacer.record(HOST, 200, 0.1, rate=4.0)
    app.admin.set_limit(HOST, 1)
    later(monkeypatch)
    pacer.record(HOST, 500, 0.1, rate=4.0)
    assert (override(app), rate_override(app)) == (1, 2.0), "the level stays; the rate follows"
    app.admin.clear_limit(HOST)
    later(monkeypatch, 2.2)
    pacer.record(HOST, 200, 0.1, rate=4.0)
    assert (override(app), rate_override(app)) == (None, None)


def test_without_adaptation_only_pauses_move_the_level(app: App) -> None:
    resumes = Resumes()
    pacer = Pacer(app, 3, None, resumes)
    pacer.record(HOST, 500, 0.1)
    assert override(app) is None
    pacer.throttle(HOST, 2.0)
    assert override(app) == 0 and resumes.sent == [(HOST, 3, 2.0)]


def test_rota_limits_list_shows_a_paused_and_a_slowed_host(app: App, tmp_path: Path) -> None:
    pacer = Pacer(app, 4, Adaptive(), Resumes())
    pacer.throttle(HOST, 30.0)
    pacer.record("slow.example", 502, 0.1)
    result = CliRunner().invoke(main, ["limits", "list", "--url", app.url])
    assert result.exit_code == 0, result.output
    lines = {line.split()[0]: line for line in result.output.splitlines() if line.strip()}
    assert "0/0 (set)" in lines[HOST], "paused: no fetch of the host may start"
    assert "0/2 (set)" in lines["slow.example"], "an error halved the level"


def test_each_fetch_carries_its_hosts_keys_and_rotates_over_hosts(app: App) -> None:
    crawler = Crawler(
        app, "shop", seeds=["http://shop.example:8080/"], per_host=3, rate="4/s", recrawl="2h"
    )
    frontier = crawler._jobs.frontier
    rules = Rules.from_result({"status": 200, "text": "User-agent: *\nCrawl-delay: 2\n"}, "rota")
    calls = [("http://shop.example:8080/a", 1, None), ("http://shop.example:8080/b", 1, None)]
    handles = frontier.fetch(HOST, rules, calls)
    again = frontier.fetch(HOST, rules, calls[:1])
    assert [h.duplicate for h in handles + again] == [False, False, True]
    assert again[0].id == handles[0].id, "a URL pending or fetched is not sent"
    job = app.store.get_job(handles[0].id)
    assert job is not None and job.task == "shop.fetch" and job.queue == "crawl"
    assert job.limit_keys == (HOST,), "concurrency, rate and breaker all on the host"
    assert job.unique_key == "shop.fetch:http://shop.example:8080/a"
    new = frontier.fetch_task_for(HOST, rules).new_job(("http://shop.example:8080/c",), {})
    assert new.fair_key == HOST, "claims rotate over hosts"
    assert [(c.key, c.limit) for c in new.concurrency] == [(HOST, 3)]
    assert [(r.key, r.rate, r.burst) for r in new.rate] == [(HOST, 0.5, 1)]
    assert [(b.key, b.failures) for b in new.breaker] == [(HOST, 5)]
    assert new.unique_for == NEVER, "held for good: recrawl jobs go round it"


def test_a_pause_is_known_at_once_here_and_at_the_next_read_elsewhere(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    here, there = Pacer(app, 4, None, Resumes()), Pacer(app, 4, None, Resumes())
    assert not there.paused(HOST)  # read from the store: no pause
    here.throttle(HOST, 30.0)
    assert here.paused(HOST)
    assert not there.paused(HOST), "its copy of the levels is trusted for a second"
    later = time.monotonic() + 1.1
    monkeypatch.setattr("rota.crawl.pacing.time.monotonic", lambda: later)
    assert there.paused(HOST)
    here.resume(HOST, 2)
    assert not here.paused(HOST)


# -- the resume jobs ------------------------------------------------------------------------


def resume_jobs(app: App) -> list[Job]:
    found = app.store.list_jobs(JobQuery(task="shop.resume"), limit=10).jobs
    return [job for job in found if not job.state.finished]


def test_a_longer_pause_asked_during_a_pause_moves_its_end_later(app: App) -> None:
    crawler = Crawler(app, "shop", seeds=["http://shop.example:8080/"])
    send = crawler._jobs._send_resume
    now = app.store.now()
    send(HOST, 2, None, 2.0, True)
    send(HOST, 2, None, 30.0, False)  # a second 429 asks for 30 s
    [job] = resume_jobs(app)
    assert job.run_at == pytest.approx(now + 30.0, abs=1.0)
    send(HOST, 2, None, 1.0, False)  # a shorter one: the longer pause stands
    assert [j.id for j in resume_jobs(app)] == [job.id]


def test_a_new_pause_replaces_a_resume_job_left_by_a_pause_ended_by_hand(app: App) -> None:
    crawler = Crawler(app, "shop", seeds=["http://shop.example:8080/"])
    send = crawler._jobs._send_resume
    now = app.store.now()
    send(HOST, 2, None, 3600.0, True)
    app.store.set_limit(HOST, None)  # the operator ends the pause (rota limits clear)
    send(HOST, 2, None, 1.0, True)
    [job] = resume_jobs(app)
    assert job.run_at == pytest.approx(now + 1.0, abs=1.0)


def test_a_pause_that_starts_while_the_last_resume_job_runs_gets_its_own(app: App) -> None:
    crawler = Crawler(app, "shop", seeds=["http://shop.example:8080/"])
    send = crawler._jobs._send_resume
    send(HOST, 2, None, 0.0, True)
    [running] = app.store.claim("w", ["crawl"], 1)  # it is lifting the pause right now
    sender = threading.Thread(target=send, args=(HOST, 2, None, 5.0, True))
    sender.start()  # its send is a duplicate of the running one: it waits for its end
    app.store.finish([Outcome(running.id, running.token, ok=True, result=b"null")])
    sender.join(timeout=10)
    assert not sender.is_alive()
    [job] = resume_jobs(app)
    assert job.id != running.id and job.state is JobState.SCHEDULED


def test_an_operators_hold_of_0_outlasts_a_throttle_seen_during_it(app: App) -> None:
    # rota limits set HOST 0 while a fetch was in flight; its answer is a 429
    crawler = Crawler(app, "shop", seeds=["http://shop.example:8080/"], per_host=1)
    app.admin.set_limit(HOST, 0)
    pause = crawler._jobs.pacer.throttle(HOST, 2.0)
    assert pause == 2.0
    assert resume_jobs(app) == [], "no resume job to lift the operator's hold"
    assert override(app) == 0
    app.admin.clear_limit(HOST)  # the operator lifts it: the crawler's pauses work again
    crawler._jobs.pacer.throttle(HOST, 2.0)
    assert override(app) == 0 and len(resume_jobs(app)) == 1
