"""A crawler's configuration, checked once when the crawler is declared."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rota import Breaker, Rate, __version__, _validate
from rota._time import parse_duration
from rota.crawl.adapt import Adaptive
from rota.crawl.robots import Rules, agent_token
from rota.crawl.urls import MAX_URL_LENGTH, Scope, canonical
from rota.errors import InvalidArgument

__all__ = ["DEFAULT_USER_AGENT", "MAX_CRAWL_NAME", "Settings", "crawl_name"]

DEFAULT_USER_AGENT = f"rota-crawler/{__version__}"
#: Largest body read of one page, by default.
DEFAULT_MAX_BYTES = 10 * 1024 * 1024
#: The longest name of a crawl: its task names (``NAME.recrawl``, a Scrapy
#: crawl's ``NAME.request``) add up to 8 characters to it.
MAX_CRAWL_NAME = _validate.MAX_NAME_LENGTH - 8


def crawl_name(value: object, what: str) -> str:
    """``value`` if it can name a crawl (a :class:`~rota.crawl.Crawler`'s or a
    Scrapy crawl's, the prefix of its task names): a non-empty string of at
    most :data:`MAX_CRAWL_NAME` printable characters, without ``/`` or
    spaces; :class:`InvalidArgument` naming ``what`` if not."""
    name = _validate.name(value, what)
    if len(name) > MAX_CRAWL_NAME:
        raise InvalidArgument(
            f"{what} {name[:40]!r}... is {len(name)} characters; at most {MAX_CRAWL_NAME} "
            "are allowed (its task names add to it)"
        )
    if "/" in name or " " in name:
        raise InvalidArgument(f"{what} must not contain '/' or spaces: {name!r}")
    return name


def _user_agent(value: object) -> str:
    """``value`` without surrounding spaces, if it can be sent as the
    ``User-Agent`` header: printable ASCII (letters, digits, punctuation and
    spaces), so no CR, LF, tab or other control character, which would make
    every request of the crawl fail; :class:`InvalidArgument` if not."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgument(f"user_agent must be a non-empty string, not {value!r}")
    bad = next((char for char in value if not " " <= char <= "~"), None)
    if bad is not None:
        raise InvalidArgument(
            f"user_agent must be printable ASCII (letters, digits, punctuation, spaces), "
            f"without control characters such as CR or LF: {value!r} has {bad!r}"
        )
    return value.strip()


def seed_urls(seeds: str | Iterable[str], what: str = "seeds") -> tuple[str, ...]:
    """Seeds (one URL or an iterable of them, the argument ``what``) in
    canonical form, each once; :class:`InvalidArgument` for anything else,
    or for one that is not an absolute http(s) URL."""
    if isinstance(seeds, str):
        items: list[object] = [seeds]
    elif isinstance(seeds, Iterable) and not isinstance(seeds, bytes | bytearray | dict):
        items = list(seeds)
    else:
        raise InvalidArgument(
            f"{what} takes an absolute http(s) URL or a list of them, not "
            f"{type(seeds).__name__} {seeds!r}"
        )
    found: dict[str, None] = {}
    for item in items:
        url = canonical(item) if isinstance(item, str) else None
        if url is None:
            raise InvalidArgument(_seed_refusal(item))
        found[url] = None
    return tuple(found)


def _seed_refusal(item: object) -> str:
    """Why ``item`` is no seed, quoting at most its first 60 characters."""
    shown = repr(item)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    if isinstance(item, str) and len(item) > MAX_URL_LENGTH:
        return (
            f"a seed must be at most {MAX_URL_LENGTH} characters long (MAX_URL_LENGTH), "
            f"not {len(item)}: {shown}"
        )
    return f"a seed must be an absolute http(s) URL, not {shown}"


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a crawler's jobs need to know, validated."""

    name: str
    seeds: tuple[str, ...]
    scope: Scope
    max_depth: int | None
    recrawl: float | None
    queue: str
    priority: int
    per_host: int
    rate: float
    burst: int
    breaker: Breaker
    retries: int
    user_agent: str
    timeout: float
    max_bytes: int
    robots_ttl: float
    robots_wait: float
    adapt: Adaptive | None

    @classmethod
    def build(
        cls,
        name: str,
        *,
        seeds: str | Iterable[str],
        allow: str | Iterable[str],
        deny: str | Iterable[str],
        domains: Iterable[str] | None,
        max_depth: int | None,
        recrawl: float | str | None,
        queue: str,
        priority: int,
        per_host: int,
        rate: str | float,
        burst: int,
        breaker: Breaker | None,
        retries: int,
        user_agent: str,
        timeout: float | str,
        max_bytes: int,
        robots_ttl: float | str,
        retention: float,
        adapt: bool | Adaptive,
    ) -> Settings:
        """Settings from a crawler's arguments; :class:`InvalidArgument` names
        the first bad one."""
        crawl_name(name, "crawler name")
        urls = seed_urls(seeds)
        per_host = _validate.integer(per_host, "per_host", 1, _validate.MAX_LIMIT)
        if breaker is None:  # the default: 5 failures, at least per_host
            breaker = Breaker(failures=max(5, per_host), cooldown="5m")
        if not isinstance(breaker, Breaker) or breaker.key is not None:
            raise InvalidArgument(
                f"breaker takes rota.Breaker(failures, cooldown) without a key (the "
                f"host is its key), not {breaker!r}"
            )
        if breaker.failures < per_host:
            raise InvalidArgument(
                f"breaker failures ({breaker.failures}) must be at least per_host "
                f"({per_host}): a closed breaker lets only that many fetches run at once"
            )
        ttl = parse_duration(robots_ttl, what="robots_ttl", positive=True)
        if ttl > retention:
            raise InvalidArgument(
                f"robots_ttl ({ttl:g} s) must not be longer than the app's retention "
                f"({retention:g} s): robots.txt is kept as a job result"
            )
        if isinstance(adapt, bool):
            adaptive: Adaptive | None = Adaptive() if adapt else None
        elif isinstance(adapt, Adaptive):
            adaptive = adapt
        else:
            raise InvalidArgument(f"adapt takes True, False or rota.crawl.Adaptive, not {adapt!r}")
        return cls(
            name=name,
            seeds=urls,
            scope=Scope.build(urls, allow, deny, domains),
            max_depth=None
            if max_depth is None
            else _validate.integer(max_depth, "max_depth", 0, 10_000),
            recrawl=None
            if recrawl is None
            else parse_duration(recrawl, what="recrawl", positive=True),
            queue=_validate.name(queue, "queue"),
            priority=_validate.integer(
                priority, "priority", _validate.MIN_PRIORITY, _validate.MAX_PRIORITY - 2
            ),
            per_host=per_host,
            rate=Rate(rate, burst=burst).per_second,
            burst=burst,
            breaker=breaker,
            retries=_validate.integer(retries, "retries", 0, _validate.MAX_RETRIES),
            user_agent=_user_agent(user_agent),
            timeout=parse_duration(timeout, what="timeout", positive=True),
            max_bytes=_validate.integer(max_bytes, "max_bytes", 1, 2**31 - 1),
            robots_ttl=ttl,
            robots_wait=min(10.0, parse_duration(timeout, what="timeout", positive=True)),
            adapt=adaptive,
        )

    @property
    def agent(self) -> str:
        """The token robots.txt groups are matched against."""
        return agent_token(self.user_agent)

    def host_rate(self, rules: Rules | None) -> float:
        """A host's fetches per second: the crawler's ``rate``, or less when
        its robots.txt asks for a ``Crawl-delay`` (or ``Request-rate``)."""
        delay = rules.delay() if rules is not None else None
        if not delay:
            return self.rate
        return max(_validate.MIN_RATE, min(self.rate, 1.0 / delay))

    def host_burst(self, rules: Rules | None) -> int:
        """A host's burst: the crawler's ``burst``, or 1 when its robots.txt
        asks for a ``Crawl-delay`` (or ``Request-rate``), whether or not that
        is slower than ``rate``: the delay is the least gap between two
        claims of its fetches (each request leaves a little after its claim)."""
        return 1 if rules is not None and rules.delay() else self.burst

    def is_seed(self, url: str) -> bool:
        """Whether ``url`` is one of the seeds (seeds are fetched whatever the scope)."""
        return url in self.seeds

    def in_scope(self, urls: Sequence[str]) -> list[str]:
        """The URLs of ``urls`` the crawl follows."""
        return [url for url in urls if self.scope.follows(url)]
