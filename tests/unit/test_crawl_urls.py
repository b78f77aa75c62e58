"""URL canonicalisation, host keys and the crawl's scope (rota.crawl.urls)."""

from __future__ import annotations

import pytest

from rota.crawl.urls import Scope, canonical, host_key, origin, resolve
from rota.errors import InvalidArgument


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        # one page, however it is written
        ("HTTP://Example.COM:80/a/../b?z=1&a=2#top", "http://example.com/b?a=2&z=1"),
        ("http://example.com/b?a=2&z=1", "http://example.com/b?a=2&z=1"),
        ("https://example.com:443", "https://example.com/"),
        ("http://example.com", "http://example.com/"),
        ("http://example.com?q=1", "http://example.com/?q=1"),
        ("http://127.0.0.1:8001/x/./y", "http://127.0.0.1:8001/x/y"),
        ("https://example.com/%7euser/ä", "https://example.com/~user/%C3%A4"),
        ("http://bücher.example/p", "http://xn--bcher-kva.example/p"),
        ("http://[::1]:80/x", "http://[::1]/x"),
        ("  http://example.com/a  ", "http://example.com/a"),
        # the fully qualified name's trailing dot: the same host
        ("http://example.com./a", "http://example.com/a"),
        ("https://Example.COM.:8443/", "https://example.com:8443/"),
        # a port that is not the scheme's default stays
        ("http://example.com:8080/", "http://example.com:8080/"),
        ("https://example.com:80/", "https://example.com:80/"),
    ],
)
def test_equivalent_urls_have_one_canonical_form(given: str, expected: str) -> None:
    assert canonical(given) == expected
    assert canonical(expected) == expected, "canonical forms are fixed points"


@pytest.mark.parametrize(
    "given",
    [
        "ftp://example.com/file",
        "mailto:someone@example.com",
        "javascript:alert(1)",
        "http://./",
        "http:///no-host",
        "/relative/path",
        "http://user:secret@example.com/",  # credentials are never followed
        "http://user@example.com/",
        "http://example.com:99999/",
        "http://example.com/" + "a" * 3000,
        "http://exa mple.com/",  # no DNS name has a space
        "http://exa%20mple.com/",
        "http://exa<mple>.com/",
        "",
    ],
)
def test_what_is_not_a_crawlable_url_has_no_canonical_form(given: str) -> None:
    assert canonical(given) is None


def test_links_resolve_against_the_page() -> None:
    page = "http://example.com/docs/intro.html"
    assert resolve(page, "setup.html#install") == "http://example.com/docs/setup.html"
    assert resolve(page, "../about?b=2&a=1") == "http://example.com/about?a=1&b=2"
    assert resolve(page, "//cdn.example.com/x") == "http://cdn.example.com/x"
    assert resolve(page, "https://Other.example/") == "https://other.example/"
    assert resolve(page, "#section") is None
    assert resolve(page, "mailto:a@example.com") is None
    assert resolve(page, "   ") is None


def test_host_key_and_origin_keep_the_port() -> None:
    assert host_key("http://127.0.0.1:8001/a") == "127.0.0.1:8001"
    assert host_key("https://example.com/a") == "example.com"
    assert origin("http://127.0.0.1:8001/a?b=1") == "http://127.0.0.1:8001"
    assert origin("https://example.com/a") == "https://example.com"


def test_by_default_only_the_seeds_hosts_are_followed() -> None:
    scope = Scope.build(["http://a.example/", "http://127.0.0.1:8001/start"])
    assert scope.follows("http://a.example/page")
    assert scope.follows("http://127.0.0.1:8001/other")
    assert scope.refusal("http://127.0.0.1:8002/") == "its host is outside the crawl"
    assert not scope.follows("http://www.a.example/")
    assert not scope.follows("http://b.example/")


def test_domains_take_their_subdomains_on_any_port() -> None:
    scope = Scope.build(["http://a.example/"], domains=["Example.org", "b.example."])
    assert scope.follows("http://example.org/")
    assert scope.follows("https://www.example.org:8443/x")
    assert scope.follows("http://b.example/")
    assert not scope.follows("http://a.example/"), "domains replace the seeds' hosts"
    assert not scope.follows("http://notexample.org/")


def test_deny_wins_over_allow() -> None:
    scope = Scope.build(
        ["http://a.example/"], allow=[r"/docs/", r"/blog/"], deny=r"\.pdf$|/drafts/"
    )
    assert scope.follows("http://a.example/docs/intro")
    assert scope.follows("http://a.example/blog/2024/post")
    assert scope.refusal("http://a.example/shop/") == "it matches no allow pattern"
    assert scope.refusal("http://a.example/docs/manual.pdf") == "it matches a deny pattern"
    assert scope.refusal("http://a.example/blog/drafts/x") == "it matches a deny pattern"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"allow": ["(unclosed"]}, r"allow pattern '\(unclosed' is not valid"),
        ({"deny": [42]}, "deny takes regular expressions"),
        ({"deny": [""]}, "deny takes regular expressions"),
        ({"domains": ["http://example.com/"]}, "a domain is a host name"),
        ({"domains": ["example.com:80"]}, "a domain is a host name"),
        ({"domains": [""]}, "domain must be a non-empty string"),
    ],
)
def test_a_bad_scope_is_refused_precisely(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        Scope.build(["http://a.example/"], **kwargs)  # type: ignore[arg-type]
