"""What a parse callback gets (:class:`Response`) and what it returns
(items, which are dicts, and :class:`Link` values to follow).

HTML is parsed with selectolax's lexbor engine, once per response, when a
callback first asks for it.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import httpx
from selectolax.lexbor import LexborHTMLParser, LexborNode

from rota.crawl.urls import resolve

__all__ = ["Link", "Response"]

_CHARSET = re.compile(r"charset\s*=\s*([^;\s]+)", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Link:
    """A URL for the crawler to follow: made absolute and canonical. The
    crawler still drops it when it is outside the crawl's scope, deeper
    than ``max_depth``, disallowed by robots.txt or already fetched (a
    recrawl fetches a page again, not a link to it)."""

    url: str


class Response:
    """One fetched page, as parse callbacks see it.

    ``url`` is the canonical URL fetched, ``depth`` its distance from a seed
    (seeds are 0), ``status`` the HTTP status (2xx: callbacks only see
    successful answers), ``headers`` the response headers (names are
    case-insensitive), ``content`` the body as bytes (at most the crawler's
    ``max_bytes``; ``truncated`` says when it was cut) and ``seconds`` how
    long it took.
    """

    def __init__(
        self,
        url: str,
        status: int,
        headers: Mapping[str, str],
        content: bytes,
        *,
        depth: int = 0,
        seconds: float = 0.0,
        truncated: bool = False,
    ) -> None:
        self.url = url
        self.status = status
        self.headers = httpx.Headers(headers)
        self.content = content
        self.depth = depth
        self.seconds = seconds
        self.truncated = truncated

    def __repr__(self) -> str:
        return f"<rota.crawl.Response {self.status} {self.url}>"

    @property
    def content_type(self) -> str:
        """The media type, lowercased, without parameters (``text/html``)."""
        value = str(self.headers.get("content-type") or "")
        return value.split(";", 1)[0].strip().lower()

    @cached_property
    def text(self) -> str:
        """The body decoded by the charset of its ``Content-Type`` (UTF-8
        when none, or an unknown one, is given); undecodable bytes become
        U+FFFD."""
        match = _CHARSET.search(str(self.headers.get("content-type") or ""))
        encoding = match.group(1).strip("\"'") if match else "utf-8"
        try:
            codecs.lookup(encoding)
        except LookupError:
            encoding = "utf-8"
        return self.content.decode(encoding, errors="replace")

    @cached_property
    def html(self) -> LexborHTMLParser:
        """The body parsed as HTML (selectolax's lexbor parser)."""
        return LexborHTMLParser(self.text)

    def css(self, selector: str) -> list[LexborNode]:
        """The HTML elements matching a CSS ``selector``."""
        return self.html.css(selector)

    def css_first(self, selector: str) -> LexborNode | None:
        """The first HTML element matching a CSS ``selector``, or None."""
        return self.html.css_first(selector)

    def follow(self, href: str) -> Link | None:
        """A link to ``href`` (relative to this page), or None when it is not
        an http(s) URL (``mailto:``, ``javascript:``, a bare ``#fragment``)."""
        url = resolve(self._base, href)
        return None if url is None else Link(url)

    def links(self, *, nofollow: bool = True) -> list[Link]:
        """The links of an HTML page (``<a href>`` and ``<area href>``), in
        page order, each once, relative ones made absolute against the page's
        ``<base href>`` or URL. With ``nofollow`` (the default) links marked
        ``rel="nofollow"`` are left out, and a page whose
        ``<meta name="robots">`` says ``nofollow`` (or ``none``) has none.
        Not HTML: no links."""
        if not self._is_html:
            return []
        if nofollow and self._meta_nofollow():
            return []
        seen: set[str] = set()
        found = []
        for node in self.html.css("a[href], area[href]"):
            if nofollow and "nofollow" in (node.attributes.get("rel") or "").lower().split():
                continue
            link = self.follow(node.attributes.get("href") or "")
            if link is not None and link.url not in seen:
                seen.add(link.url)
                found.append(link)
        return found

    @cached_property
    def _base(self) -> str:
        base = self.html.css_first("base[href]") if self._is_html else None
        href = base.attributes.get("href") if base is not None else None
        return (resolve(self.url, href) or self.url) if href else self.url

    @property
    def _is_html(self) -> bool:
        return self.content_type in ("text/html", "application/xhtml+xml", "")

    def _meta_nofollow(self) -> bool:
        for meta in self.html.css("meta[name][content]"):
            if (meta.attributes.get("name") or "").lower() == "robots":
                words = (meta.attributes.get("content") or "").lower().replace(",", " ").split()
                if "nofollow" in words or "none" in words:
                    return True
        return False
