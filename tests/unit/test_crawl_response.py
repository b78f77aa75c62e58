"""What parse callbacks get (rota.crawl.Response): decoding, CSS selection
and the links of a page (base href, nofollow, meta robots)."""

from __future__ import annotations

from rota.crawl import Link, Response

PAGE = """<!doctype html>
<html><head>
  <title>Caf\u00e9 menu</title>
  <base href="/menu/">
</head><body>
  <a href="soups.html#today">Soups</a>
  <a href="soups.html">Soups again</a>
  <a href="/drinks?size=l&amp;kind=tea">Tea</a>
  <a rel="nofollow sponsored" href="https://ads.example/x">Ad</a>
  <a href="mailto:chef@example.com">Mail</a>
  <a href="javascript:void(0)">Nothing</a>
  <a>no href</a>
  <map><area href="//maps.example/cafe" alt="map"></map>
  <p class="price">4.50</p><p class="price">6.00</p>
</body></html>"""


def html(body: str | bytes, content_type: str = "text/html; charset=utf-8") -> Response:
    data = body.encode() if isinstance(body, str) else body
    return Response("http://cafe.example/index.html", 200, {"Content-Type": content_type}, data)


def test_links_are_absolute_canonical_once_each_in_page_order() -> None:
    assert html(PAGE).links() == [
        Link("http://cafe.example/menu/soups.html"),
        Link("http://cafe.example/drinks?kind=tea&size=l"),
        Link("http://maps.example/cafe"),
    ]


def test_nofollow_links_are_kept_when_asked() -> None:
    links = html(PAGE).links(nofollow=False)
    assert Link("https://ads.example/x") in links


def test_a_meta_robots_nofollow_page_has_no_links() -> None:
    page = html('<meta name="ROBOTS" content="noindex,nofollow"><a href="/x">x</a>')
    assert page.links() == []
    assert page.links(nofollow=False) == [Link("http://cafe.example/x")]
    assert html('<meta name="robots" content="none"><a href="/x">x</a>').links() == []
    assert html('<meta name="robots" content="noindex"><a href="/x">x</a>').links() != []


def test_follow_resolves_against_the_base_and_refuses_what_is_not_http() -> None:
    page = html(PAGE)
    assert page.follow("../about") == Link("http://cafe.example/about")
    assert page.follow("mailto:chef@example.com") is None
    assert page.follow("#top") is None
    plain = html("<p>no base</p>")
    assert plain.follow("about") == Link("http://cafe.example/about")


def test_css_selects_elements() -> None:
    page = html(PAGE)
    title = page.css_first("title")
    assert title is not None and title.text() == "Caf\u00e9 menu"
    assert [p.text() for p in page.css("p.price")] == ["4.50", "6.00"]
    assert page.css_first("table") is None


def test_text_is_decoded_by_the_declared_charset() -> None:
    latin = html("<p>Caf\u00e9</p>".encode("latin-1"), "text/html; charset=iso-8859-1")
    assert "Caf\u00e9" in latin.text
    undeclared = html("<p>Caf\u00e9</p>".encode(), "text/html")
    assert "Caf\u00e9" in undeclared.text, "UTF-8 when no charset is given"
    broken = html(b"<p>\xff\xfe</p>", "text/html; charset=utf-8")
    assert "\ufffd" in broken.text
    quoted = html("<p>Caf\u00e9</p>".encode("cp1252"), 'text/html; Charset="windows-1252"')
    assert "Caf\u00e9" in quoted.text
    unknown = html("<p>Caf\u00e9</p>".encode(), "text/html; charset=klingon")
    assert "Caf\u00e9" in unknown.text, "an unknown charset: UTF-8"


def test_a_compressed_answer_is_read_as_the_client_decompressed_it() -> None:
    page = Response(
        "http://cafe.example/",
        200,
        {"Content-Type": "text/html; charset=utf-8", "Content-Encoding": "gzip"},
        "<title>Caf\u00e9</title>".encode(),
    )
    title = page.css_first("title")
    assert title is not None and title.text() == "Caf\u00e9"


def test_what_is_not_html_has_no_links() -> None:
    feed = html(b'{"href": "/x"}', "application/json")
    assert feed.content_type == "application/json"
    assert feed.links() == []


def test_headers_ignore_case_and_the_response_says_what_it_is() -> None:
    page = Response(
        "http://cafe.example/",
        200,
        {"ETag": '"v1"'},
        b"",
        depth=2,
        seconds=0.25,
        truncated=True,
    )
    assert page.headers["etag"] == '"v1"'
    assert (page.depth, page.seconds, page.truncated) == (2, 0.25, True)
    assert repr(page) == "<rota.crawl.Response 200 http://cafe.example/>"
