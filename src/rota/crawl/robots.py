"""robots.txt read as RFC 9309 says, with protego doing the parsing and matching.

The robots job of an origin stores what it fetched (status and text, see
:func:`stored`); every worker turns that into :class:`Rules`. What the
status means (RFC 9309, section 2.3.1):

- 2xx: the file's rules;
- 4xx other than 429 ("unavailable"): every URL may be fetched;
- 429, 5xx and network errors ("unreachable"): nothing may be fetched until
  the file can be fetched; the robots job fails and is tried again, and the
  origin's pages wait for it (:func:`reachable` is false);
- redirects are followed (up to five); a longer chain counts as unavailable.

Only the first 500 KiB of a file are read (the RFC's minimum for parsers).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from protego import Protego

__all__ = ["MAX_ROBOTS_BYTES", "Rules", "agent_token", "reachable", "stored"]

#: Bytes of a robots.txt file that are read.
MAX_ROBOTS_BYTES = 500 * 1024


def reachable(status: int) -> bool:
    """Whether a robots.txt answer with this status can be used: false for
    429 and 5xx, which mean "try again later; fetch nothing meanwhile"."""
    return status != 429 and not 500 <= status <= 599


def stored(status: int, body: bytes) -> dict[str, Any]:
    """What the robots job keeps as its result (JSON) for a usable answer."""
    text = body[:MAX_ROBOTS_BYTES].decode("utf-8", errors="replace") if status < 300 else ""
    return {"status": status, "text": text}


def agent_token(user_agent: str) -> str:
    """The product token robots.txt groups are matched against: the user
    agent up to its first ``/`` or space (``rota-crawler/0.1 (+...)`` →
    ``rota-crawler``)."""
    token = user_agent.strip().split("/", 1)[0].split(" ", 1)[0]
    return token or "*"


@dataclass(frozen=True, slots=True)
class Rules:
    """The robots.txt rules of one origin, for one crawler's user agent."""

    status: int
    agent: str
    parsed: Protego | None  # None: every URL may be fetched

    @classmethod
    def from_result(cls, result: dict[str, Any], agent: str) -> Rules:
        """Rules from a robots job's result (see :func:`stored`)."""
        status = int(result["status"])
        text = str(result.get("text") or "")
        parsed = Protego.parse(text) if 200 <= status < 300 and text.strip() else None
        return cls(status, agent, parsed)

    def allows(self, url: str) -> bool:
        """Whether ``url`` (of this origin) may be fetched: the origin's own
        ``/robots.txt`` always may (RFC 9309, section 2.2.2)."""
        if self.parsed is None or urlsplit(url).path == "/robots.txt":
            return True
        return bool(self.parsed.can_fetch(url, self.agent))

    def delay(self) -> float | None:
        """Seconds to leave between two requests to the host, from
        ``Crawl-delay`` and ``Request-rate`` (the longer), or None."""
        if self.parsed is None:
            return None
        delays = []
        crawl_delay = self.parsed.crawl_delay(self.agent)
        if crawl_delay:
            delays.append(float(crawl_delay))
        rate = self.parsed.request_rate(self.agent)
        if rate is not None and rate.requests > 0:
            delays.append(rate.seconds / rate.requests)
        positive = [d for d in delays if d > 0]
        return max(positive) if positive else None
