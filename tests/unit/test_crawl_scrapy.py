"""rota.crawl.scrapy's pure parts: a Scrapy request kept as a job argument
(JSON) and rebuilt, what cannot be kept, host keys, the settings helper and
the dupefilter's memory. No store, no network."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import scrapy
from scrapy.http import FormRequest, JsonRequest
from scrapy.utils.test import get_crawler

from rota import App, _validate
from rota.crawl.scrapy import (
    DupeFilter,
    Finish,
    Scheduler,
    UnstorableRequest,
    host_of,
    options,
    settings,
)
from rota.crawl.scrapy.frontier import Politeness, SharedFrontier
from rota.crawl.scrapy.stored import PRIVATE, decode, encode
from rota.crawl.urls import canonical, host_key
from rota.errors import InvalidArgument, SerializationError


class Shop(scrapy.Spider):
    name = "shop"

    def parse(self, response: Any) -> None:
        return None

    def parse_item(self, response: Any, sku: str) -> None:
        return None

    def failed(self, failure: Any) -> None:
        return None


class Other(scrapy.Spider):
    name = "other"


def kept(request: scrapy.Request, spider: scrapy.Spider) -> scrapy.Request:
    """``request`` through the store's JSON and back."""
    data = orjson.loads(orjson.dumps(encode(request, spider)))
    return decode(data, spider)


def test_a_request_comes_back_with_all_it_carries() -> None:
    spider = Shop()
    body = bytes(range(256))  # every byte, not text
    request = scrapy.Request(
        "https://example.com/items?page=2",
        method="PUT",
        headers={"X-Token": "abc", "Accept-Language": ["fr", "en"], "X-Name": "caf\xe9"},
        body=body,
        meta={"depth": 3, "tags": ["a", None, 1.5], "nested": {"ok": True}},
        cb_kwargs={"sku": "A-1"},
        priority=-7,
        flags=["retry"],
        dont_filter=True,
        callback=spider.parse_item,
        errback=spider.failed,
    )
    back = kept(request, spider)
    assert type(back) is scrapy.Request
    assert (back.url, back.method, back.body) == (request.url, "PUT", body)
    assert back.headers.getlist("Accept-Language") == [b"fr", b"en"]
    assert back.headers["X-Token"] == b"abc"
    assert dict(back.headers) == dict(request.headers)  # non-ASCII bytes too
    assert back.meta == request.meta
    assert back.cb_kwargs == {"sku": "A-1"}
    assert (back.priority, back.flags, back.dont_filter) == (-7, ["retry"], True)
    assert back.callback == spider.parse_item
    assert back.errback == spider.failed


def test_a_request_without_callback_or_body_stays_so() -> None:
    back = kept(scrapy.Request("http://example.com/"), Shop())
    assert (back.method, back.body, back.callback, back.errback) == ("GET", b"", None, None)
    assert (back.meta, back.priority, back.dont_filter) == ({}, 0, False)


def test_request_classes_are_kept() -> None:
    spider = Shop()
    form = kept(FormRequest("http://example.com/login", formdata={"user": "ann"}), spider)
    assert type(form) is FormRequest
    assert (form.method, form.body) == ("POST", b"user=ann")
    as_json = kept(JsonRequest("http://example.com/api", data={"q": 1}), spider)
    assert type(as_json) is JsonRequest
    assert orjson.loads(as_json.body) == {"q": 1}


def test_the_claim_this_process_holds_is_not_stored() -> None:
    request = scrapy.Request("http://example.com/", meta={PRIVATE: "job-1", "depth": 1})
    assert encode(request, Shop())["meta"] == {"depth": 1}


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"meta": {"item": {"when": object()}}}, "meta['item']['when']"),
        ({"meta": {"seen": {1, 2}}}, "meta['seen']"),
        ({"meta": {"ratio": float("nan")}}, "meta['ratio']"),
        ({"cb_kwargs": {"page": b"raw"}}, "cb_kwargs['page']"),
        ({"meta": {1: "int key"}}, "meta"),
    ],
)
def test_what_is_not_json_is_refused_by_path(fields: dict[str, Any], path: str) -> None:
    request = scrapy.Request("http://example.com/x", **fields)
    with pytest.raises(UnstorableRequest) as refused:
        encode(request, Shop())
    message = str(refused.value)
    assert message.startswith("request http://example.com/x: ")
    assert path in message
    assert isinstance(refused.value, SerializationError)


def test_a_callback_that_is_not_the_spiders_is_refused() -> None:
    request = scrapy.Request("http://example.com/", callback=lambda response: None)
    with pytest.raises(UnstorableRequest, match=r"request http://example.com/: .*lambda"):
        encode(request, Shop())


def test_a_callback_the_spider_no_longer_has_cannot_be_rebuilt() -> None:
    data = encode(scrapy.Request("http://example.com/", callback=Shop().parse_item), Shop())
    with pytest.raises(ValueError, match="parse_item"):
        decode(data, Other())


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("http://Example.COM/a", "example.com"),
        ("http://example.com:80/", "example.com"),
        ("https://example.com:443/", "example.com"),
        ("https://example.com:8443/", "example.com:8443"),
        ("http://127.0.0.1:8731/p1", "127.0.0.1:8731"),
        ("http://[::1]:8080/", "[::1]:8080"),
        ("http://example.com./a", "example.com"),
    ],
)
def test_host_keys_are_the_crawl_kits(url: str, key: str) -> None:
    assert host_of(url) == key
    assert host_key(canonical(url) or "") == key  # one key per host for both kits


def test_credentials_are_not_part_of_a_host_key() -> None:
    assert host_of("http://user:secret@example.com/") == "example.com"


def test_settings_name_the_scheduler_dupefilter_and_middleware() -> None:
    values = settings("redis://127.0.0.1:6379/0", name="shop", per_host=3, rate="5/s", burst=2)
    assert values["SCHEDULER"] == "rota.crawl.scrapy.Scheduler"
    assert values["DUPEFILTER_CLASS"] == "rota.crawl.scrapy.DupeFilter"
    assert values["SPIDER_MIDDLEWARES"] == {"rota.crawl.scrapy.Finish": 10}
    assert values["DOWNLOADER_MIDDLEWARES"] == {"rota.crawl.scrapy.Finish": 50}
    assert values["ROTA_URL"] == "redis://127.0.0.1:6379/0"
    assert (values["ROTA_NAME"], values["ROTA_PER_HOST"], values["ROTA_RATE"]) == ("shop", 3, "5/s")
    assert values["ROTA_BURST"] == 2
    assert "ROTA_URL" not in settings() and "ROTA_RATE" not in settings()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"per_host": 0}, "per_host must be at least 1"),
        ({"per_host": "2"}, "per_host must be an integer"),
        ({"rate": "fast"}, "rate 'fast' is not valid"),
        ({"burst": 0}, "burst must be at least 1"),
        ({"lease": 0}, "lease must be above 0"),
        ({"lease": "1 week"}, "lease '1 week' is not a duration"),
        ({"url": "notaurl"}, "url: store URL 'notaurl' has no scheme"),
        ({"url": 5}, "url must be a store URL .a string., not 5"),
        ({"name": ""}, "name must be a non-empty string"),
        ({"name": "a b"}, r"^name must not contain '/' or spaces: 'a b'$"),
        ({"name": "a/b"}, r"^name must not contain '/' or spaces: 'a/b'$"),
        ({"name": "a" * 193}, r"^name 'a+'\.\.\. is 193 characters; at most 192 are allowed"),
    ],
)
def test_bad_settings_are_refused_naming_the_argument(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        settings(**kwargs)


def test_settings_give_durations_in_seconds_as_the_scheduler_reads_them() -> None:
    assert settings(lease="30s")["ROTA_LEASE"] == 30.0
    assert settings(lease="2m")["ROTA_LEASE"] == 120.0
    scheduler = Scheduler.from_crawler(get_crawler(Shop, settings(lease="30s", rate="5/s")))
    assert scheduler.options.lease == 30.0
    assert scheduler.options.politeness == Politeness(per_host=2, rate="5/s", burst=1)


def test_settings_given_with_scrapy_s_are_read_from_text() -> None:
    given = {  # as `scrapy crawl -s NAME=VALUE` gives them: every value a string
        "ROTA_URL": "sqlite:///shop.db",
        "ROTA_NAME": "shop",
        "ROTA_PER_HOST": "3",
        "ROTA_RATE": "5",
        "ROTA_BURST": "2",
        "ROTA_LEASE": "2m",
        "ROTA_UNIQUE_FOR": "1w",
        "ROTA_FILTER_START": "False",
        "ROTA_POLL": "0.5",
    }
    read = options.read(get_crawler(Shop, given).settings, "shop")
    assert (read.url, read.name, read.queue) == ("sqlite:///shop.db", "shop", "scrapy-shop")
    assert read.politeness == Politeness(per_host=3, rate=5.0, burst=2)
    assert (read.lease, read.unique_for, read.filter_start, read.poll) == (120, 604800, False, 0.5)
    default = options.read(get_crawler(Shop, {}).settings, "shop")
    assert (default.url, default.lease, default.filter_start, default.poll) == (None, 30, True, 0.2)
    assert default.politeness == Politeness() and default.unique_for == _validate.MAX_DURATION


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"ROTA_PER_HOST": "0"}, r"^ROTA_PER_HOST must be at least 1"),
        ({"ROTA_PER_HOST": "abc"}, r"^ROTA_PER_HOST must be an integer, not 'abc'$"),
        ({"ROTA_BURST": "1.5"}, r"^ROTA_BURST must be an integer, not '1.5'$"),
        ({"ROTA_RATE": "fast"}, r"^ROTA_RATE: rate 'fast' is not valid"),
        ({"ROTA_LEASE": "0"}, r"^ROTA_LEASE must be above 0"),
        ({"ROTA_UNIQUE_FOR": "1 week"}, r"^ROTA_UNIQUE_FOR '1 week' is not a duration"),
        ({"ROTA_POLL": "-1"}, r"^ROTA_POLL must not be negative"),
        ({"ROTA_FILTER_START": "maybe"}, r"^ROTA_FILTER_START must be True or False"),
        ({"ROTA_URL": "notaurl"}, r"^ROTA_URL: store URL 'notaurl' has no scheme"),
        ({"ROTA_URL": 5}, r"^ROTA_URL must be a store URL \(a string\), not 5$"),
        ({"ROTA_NAME": " "}, r"^ROTA_NAME must be a non-empty string, not ' '$"),
        ({"ROTA_NAME": ""}, r"^ROTA_NAME must be a non-empty string, not ''$"),
        ({"ROTA_NAME": "a b"}, r"^ROTA_NAME must not contain '/' or spaces: 'a b'$"),
        ({"ROTA_NAME": "a/b"}, r"^ROTA_NAME must not contain '/' or spaces: 'a/b'$"),
        ({"ROTA_NAME": 5}, r"^ROTA_NAME must be a non-empty string, not 5$"),
        ({"ROTA_QUEUE": ""}, r"^ROTA_QUEUE must be a non-empty string, not ''$"),
        ({"ROTA_QUEUE": " q"}, r"^ROTA_QUEUE ' q' must not have control characters or surrounding"),
        ({"ROTA_QUEUE": "q\n"}, r"^ROTA_QUEUE 'q\\n' must not have control characters"),
        ({"ROTA_DUPEFILTER_SIZE": "big"}, r"^ROTA_DUPEFILTER_SIZE must be an integer"),
    ],
)
def test_bad_rota_settings_are_refused_naming_the_setting(
    given: dict[str, Any], message: str
) -> None:
    crawler = get_crawler(Shop, given)
    with pytest.raises(InvalidArgument, match=message):
        Finish.from_crawler(crawler)  # built with the engine, before the spider opens
    with pytest.raises(InvalidArgument, match=message):
        Scheduler.from_crawler(crawler)
    if "ROTA_DUPEFILTER_SIZE" in given:  # the dupefilter's own
        with pytest.raises(InvalidArgument, match=message):
            DupeFilter.from_crawler(crawler)


class Spaced(scrapy.Spider):
    name = "my shop"


def test_the_crawl_is_the_spiders_name_unless_rota_name_says_otherwise() -> None:
    read = options.of(get_crawler(Shop, {"ROTA_QUEUE": "shop pages"}))
    assert (read.name, read.queue) == ("shop", "shop pages")
    read = options.of(get_crawler(Spaced, {"ROTA_NAME": "my-shop"}))
    assert (read.name, read.queue) == ("my-shop", "scrapy-my-shop")
    message = (
        r"^the spider's name \(the crawl's, ROTA_NAME being unset\) must not contain '/' or "
        r"spaces: 'my shop'$"
    )
    with pytest.raises(InvalidArgument, match=message):
        Finish.from_crawler(get_crawler(Spaced, {}))


def test_the_dupefilter_remembers_the_last_fingerprints_it_met() -> None:
    dupes = DupeFilter.from_crawler(get_crawler(Shop, {"ROTA_DUPEFILTER_SIZE": 2}))
    a, b, c = (scrapy.Request(f"http://example.com/{n}") for n in "abc")
    assert [dupes.request_seen(r) for r in (a, a, b)] == [False, True, False]
    assert dupes.request_seen(scrapy.Request("http://example.com/a")) is True  # same fingerprint
    assert dupes.request_seen(c) is False  # b is now the oldest, and goes
    assert dupes.request_seen(b) is False
    dupes.close("finished")
    assert dupes.request_seen(a) is False


@pytest.mark.parametrize(
    ("politeness", "message"),
    [
        (Politeness(per_host=0), "concurrency limit must be at least 1"),
        (Politeness(rate="fast"), "rate 'fast' is not valid"),
        (Politeness(rate=5, burst=0), "rate burst"),
    ],
)
def test_bad_politeness_is_refused_before_anything_is_sent(
    politeness: Politeness, message: str
) -> None:
    app = App("sqlite:///never-opened.db")  # no store is opened
    with pytest.raises(InvalidArgument, match=message):
        SharedFrontier(
            app, "shop", queue="scrapy-shop", politeness=politeness, unique_for=None, concurrency=8
        )
    assert app._store is None
