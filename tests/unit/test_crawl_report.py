"""The pure parts of rota.crawl.report: which task names make a crawl, and
what a robots job says of its origin's robots.txt."""

from __future__ import annotations

from typing import Any

from helpers import shown_job
from rota.crawl.report import crawl_names, robots_status
from rota.models import Job, JobState


def robots_job(state: JobState, result: Any = None, error: str | None = None) -> Job:
    return shown_job(
        id="r1",
        task="site.robots",
        queue="crawl",
        state=state,
        args=["https://example.com"],
        priority=2,
        run_at=100.0,
        enqueued_at=100.0,
        max_attempts=4,
        finished_at=105.0 if state is JobState.SUCCEEDED else None,
        result=result,
        error=error,
    )


def test_a_crawl_is_a_fetch_task_with_its_robots_task() -> None:
    names = {"site.fetch", "site.robots", "site.admit", "shop.fetch", "a.b.fetch", "a.b.robots"}
    assert crawl_names(names) == ["a.b", "site"]
    assert crawl_names({"shop.fetch", "robots", ".robots"}) == []


def test_robots_states() -> None:
    agent = "rota-crawler"
    rules = {"status": 200, "text": "User-agent: *\nDisallow: /private/\n"}
    found = robots_status(robots_job(JobState.SUCCEEDED, rules), agent)
    assert (found.state, found.status, found.fetched_at, found.job) == ("fetched", 200, 105.0, "r1")
    everything = {"status": 200, "text": "User-agent: *\nDisallow: /\n"}
    assert robots_status(robots_job(JobState.SUCCEEDED, everything), agent).state == "disallow-all"
    others_only = {"status": 200, "text": "User-agent: badbot\nDisallow: /\n"}
    assert robots_status(robots_job(JobState.SUCCEEDED, others_only), agent).state == "fetched"
    for missing in ({"status": 404, "text": ""}, {"status": 200, "text": "  \n"}):
        found = robots_status(robots_job(JobState.SUCCEEDED, missing), agent)
        assert (found.state, found.status) == ("allows", missing["status"])
    error = "FetchFailed: 5xx: https://example.com/robots.txt answered 503: ..."
    for state in (JobState.QUEUED, JobState.RUNNING, JobState.SCHEDULED):
        found = robots_status(robots_job(state, error=error), agent)
        assert (found.state, found.fetched_at, found.error) == ("waiting", None, error)
    assert robots_status(robots_job(JobState.FAILED, error=error), agent).state == "failed"
