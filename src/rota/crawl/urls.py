"""URLs as the crawler keeps them: canonical forms, host keys and the crawl's scope.

Pure functions: no I/O. Canonicalisation is w3lib's (query arguments
sorted, percent-encoding normalised, the fragment dropped, the host
lowercased and IDNA-encoded), plus the scheme's default port and the
host's trailing dot dropped, so ``HTTP://Example.com.:80/a?b=2&a=1#top``
and ``http://example.com/a?a=1&b=2`` are one page, fetched once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit, urlunsplit

from w3lib.url import canonicalize_url

from rota import _validate
from rota.errors import InvalidArgument

__all__ = ["Scope", "canonical", "host_key", "origin", "resolve"]

_SCHEMES = ("http", "https")
_DEFAULT_PORTS = {"http": 80, "https": 443}
#: Longest URL the crawler keeps; longer ones are dropped (most servers
#: refuse them anyway).
MAX_URL_LENGTH = 2048
#: A host name as DNS has it (letters, digits, hyphens, dots; underscores,
#: which some hosts have), an IPv4 address, or an IPv6 one (unbracketed).
_HOST = re.compile(r"[a-z0-9_.-]+|[0-9a-f:.]+")


def canonical(url: str) -> str | None:
    """The canonical form of an absolute http(s) URL, or None for anything
    else (another scheme, no host or one no DNS name has, such as one with a
    space, credentials in it, a malformed or overlong URL)."""
    if not isinstance(url, str) or len(url) > MAX_URL_LENGTH:
        return None
    try:
        parts = urlsplit(url.strip())
        if parts.scheme.lower() not in _SCHEMES or not parts.hostname:
            return None
        if parts.username is not None or parts.password is not None:
            return None  # credentials in a link are never followed
        parts.port  # noqa: B018  (raises ValueError for a bad port)
        parts = urlsplit(canonicalize_url(urlunsplit(parts), keep_fragments=False))
        port = parts.port
    except ValueError:
        return None
    host = (parts.hostname or "").rstrip(".")  # "example.com." is example.com
    if not _HOST.fullmatch(host):
        return None
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != _DEFAULT_PORTS[parts.scheme]:
        netloc = f"{netloc}:{port}"
    text = urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
    return text if len(text) <= MAX_URL_LENGTH else None


def resolve(base: str, href: str) -> str | None:
    """``href`` as found on the page at ``base``, made absolute and canonical
    (None when it is not a crawlable http(s) URL)."""
    href = href.strip()
    if not href or href.startswith("#"):
        return None
    try:
        return canonical(urljoin(base, href))
    except ValueError:
        return None


def host_key(url: str) -> str:
    """The politeness key of a canonical URL: its host and port as they
    appear in it (``example.com``, ``127.0.0.1:8001``). Every fetch of the
    host carries it as its concurrency, rate and breaker key."""
    return urlsplit(url).netloc


def origin(url: str) -> str:
    """The origin of a canonical URL (``https://example.com``): robots.txt
    is read once per origin."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _patterns(value: str | Iterable[str], what: str) -> tuple[re.Pattern[str], ...]:
    items = [value] if isinstance(value, str) else list(value)
    compiled = []
    for item in items:
        if not isinstance(item, str) or not item:
            raise InvalidArgument(f"{what} takes regular expressions (strings), not {item!r}")
        try:
            compiled.append(re.compile(item))
        except re.error as exc:
            raise InvalidArgument(f"{what} pattern {item!r} is not valid: {exc}") from None
    return tuple(compiled)


def _domains(value: Iterable[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    domains = []
    for item in value:
        _validate.name(item, "domain")
        domain = item.strip(".").lower()
        if "/" in domain or ":" in domain or not domain:
            raise InvalidArgument(f"a domain is a host name such as 'example.com', not {item!r}")
        domains.append(domain)
    return tuple(domains)


@dataclass(frozen=True, slots=True)
class Scope:
    """Which links a crawl follows.

    - ``allow``: regular expressions (``re.search``); when given, a URL must
      match one of them;
    - ``deny``: a URL matching any of them is not followed (deny wins);
    - ``domains``: host names whose hosts (the name itself and its
      subdomains, any port) are followed; None (the default): only the
      hosts of the seeds, with their ports.
    """

    allow: tuple[re.Pattern[str], ...] = ()
    deny: tuple[re.Pattern[str], ...] = ()
    domains: tuple[str, ...] | None = None
    hosts: frozenset[str] = frozenset()

    @classmethod
    def build(
        cls,
        seeds: Sequence[str],
        allow: str | Iterable[str] = (),
        deny: str | Iterable[str] = (),
        domains: Iterable[str] | None = None,
    ) -> Scope:
        """A scope from user input; :class:`InvalidArgument` names a bad pattern or domain."""
        return cls(
            allow=_patterns(allow, "allow"),
            deny=_patterns(deny, "deny"),
            domains=_domains(domains),
            hosts=frozenset(host_key(seed) for seed in seeds),
        )

    def refusal(self, url: str) -> str | None:
        """Why the canonical ``url`` is not followed, or None when it is."""
        if not self.takes_host(url):
            return "its host is outside the crawl"
        if any(p.search(url) for p in self.deny):
            return "it matches a deny pattern"
        if self.allow and not any(p.search(url) for p in self.allow):
            return "it matches no allow pattern"
        return None

    def takes_host(self, url: str) -> bool:
        """Whether the host of the canonical ``url`` is in the crawl."""
        return self._host_allowed(url)

    def follows(self, url: str) -> bool:
        """Whether the canonical ``url`` is in the crawl."""
        return self.refusal(url) is None

    def _host_allowed(self, url: str) -> bool:
        if self.domains is None:
            return host_key(url) in self.hosts
        name = (urlsplit(url).hostname or "").lower()
        return any(name == d or name.endswith("." + d) for d in self.domains)
