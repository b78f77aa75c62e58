"""robots.txt read as RFC 9309 says (rota.crawl.robots): what each answer
means, matching by the crawler's product token, and Crawl-delay."""

from __future__ import annotations

import pytest

from rota.crawl.robots import MAX_ROBOTS_BYTES, Rules, agent_token, reachable, stored

AGENT = "rota-crawler"

FILE = b"""\
# a comment
User-agent: *
Disallow: /private/
Allow: /private/open
Disallow: /*.pdf$
Crawl-delay: 2

User-agent: rota-crawler
Disallow: /no-rota/
Allow: /
"""


def rules_of(status: int, body: bytes = b"") -> Rules:
    return Rules.from_result(stored(status, body), AGENT)


def test_a_2xx_file_is_obeyed_and_the_most_specific_group_wins() -> None:
    rules = rules_of(200, FILE)
    assert not rules.allows("http://h/no-rota/page"), "the rota-crawler group applies"
    assert rules.allows("http://h/private/page"), "the * group does not apply to us"
    other = Rules.from_result(stored(200, FILE), "somebot")
    assert not other.allows("http://h/private/page")
    assert other.allows("http://h/private/open"), "the longest match wins: Allow"
    assert not other.allows("http://h/docs/manual.pdf")
    assert other.allows("http://h/docs/manual.pdf?download=1"), "$ anchors the end"


def test_robots_txt_itself_is_always_allowed() -> None:
    rules = rules_of(200, b"User-agent: *\nDisallow: /\n")
    assert not rules.allows("http://h/")
    assert rules.allows("http://h/robots.txt")


def test_only_the_root_robots_txt_is_exempt_from_the_rules() -> None:
    rules = Rules.from_result({"status": 200, "text": "User-agent: *\nDisallow: /secret\n"}, AGENT)
    assert rules.allows("http://h/robots.txt")
    assert not rules.allows("http://h/secret/robots.txt")
    assert not rules.allows("http://h/secretary/robots.txt")


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 451])
def test_4xx_means_unavailable_so_everything_may_be_fetched(status: int) -> None:
    assert reachable(status)
    rules = rules_of(status, b"User-agent: *\nDisallow: /\n")  # an error page's body is ignored
    assert rules.allows("http://h/anything")
    assert rules.delay() is None


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504, 599])
def test_429_and_5xx_mean_unreachable_so_nothing_is_fetched_until_it_is_read(
    status: int,
) -> None:
    assert not reachable(status)


def test_a_redirect_chain_too_long_counts_as_unavailable() -> None:
    assert rules_of(310).allows("http://h/x")


def test_an_empty_or_unparseable_file_allows_everything() -> None:
    assert rules_of(200, b"").allows("http://h/x")
    assert rules_of(200, b"<html><body>Not found</body></html>").allows("http://h/x")


def test_only_the_first_500_kib_are_read() -> None:
    padding = b"# " + b"x" * (MAX_ROBOTS_BYTES + 10) + b"\n"
    result = stored(200, padding + b"User-agent: *\nDisallow: /\n")
    assert len(result["text"].encode()) <= MAX_ROBOTS_BYTES
    assert Rules.from_result(result, AGENT).allows("http://h/x"), "rules past the cap are unread"


def test_crawl_delay_and_request_rate_give_the_longer_delay() -> None:
    assert rules_of(200, b"User-agent: *\nCrawl-delay: 2\n").delay() == 2.0
    assert rules_of(200, b"User-agent: *\nRequest-rate: 1/5s\n").delay() == 5.0
    both = rules_of(200, b"User-agent: *\nCrawl-delay: 1\nRequest-rate: 3/6\n")
    assert both.delay() == 2.0
    assert rules_of(200, b"User-agent: *\nCrawl-delay: 0\n").delay() is None
    assert rules_of(200, b"User-agent: *\nDisallow: /x\n").delay() is None


def test_the_product_token_is_matched_not_the_whole_user_agent() -> None:
    assert agent_token("rota-crawler/0.1 (+https://example.com/bot)") == "rota-crawler"
    assert agent_token("MyBot") == "MyBot"
    assert agent_token("  ") == "*"
    rules = Rules.from_result(stored(200, FILE), agent_token("Rota-Crawler/2.0"))
    assert not rules.allows("http://h/no-rota/x"), "matching ignores case"


def test_the_stored_result_is_json_and_keeps_no_body_for_other_answers() -> None:
    assert stored(200, b"User-agent: *\n") == {"status": 200, "text": "User-agent: *\n"}
    assert stored(404, b"<html>gone</html>") == {"status": 404, "text": ""}
    assert stored(200, b"\xff\xfeUser-agent") == {"status": 200, "text": "\ufffd\ufffdUser-agent"}
