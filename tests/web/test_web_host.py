"""The open dashboard's Host check: parsed strictly, malformed values refused with 400."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from rota.errors import InvalidArgument
from rota.web._auth import parse_host
from web.support import Demo, expect_error

# Values no browser sends: user info, extra colons, bad ports, trailing dots,
# unbracketed or malformed IPv6, zone ids, empty or hyphen-edged labels.
MALFORMED = [
    "127.0.0.1:8000@evil.com",
    "localhost:8000@evil.com",
    "evil.com@localhost",
    "127.0.0.1:8000:9000",
    "localhost:",
    "localhost:http",
    "localhost:+80",
    "localhost:-1",
    "localhost:65536",
    "localhost:123456",
    "localhost.",
    "127.0.0.1.",
    "app.localhost.",
    "localhost..",
    ".localhost",
    "a..localhost",
    "-x.localhost",
    "x-.localhost",
    "local_host",
    "localhost/evil",
    "localhost evil",
    "::1",
    "::1:8000",
    "[::1",
    "[::1]8000",
    "[::1]:",
    "[::1]:x",
    "[fe80::1%25lo]:8000",
    "[127.0.0.1]",
    "[v1.fe]",
    "[]",
    "",
]
LOOPBACK = [
    ("127.0.0.1:8000", "127.0.0.1"),
    ("LOCALHOST", "localhost"),
    ("LocalHost:8000", "localhost"),
    ("APP.LOCALHOST:65535", "app.localhost"),
    ("127.0.0.2", "127.0.0.2"),
    ("[::1]", "::1"),
    ("[0:0:0:0:0:0:0:1]:8000", "::1"),
]
ELSEWHERE = [
    "localhost.evil.com",
    "LOCALHOST.EVIL.COM:8000",
    "127.0.0.1.evil.com",
    "evil.com:8000",
    "10.0.0.5:8000",
    "127.1",
    "2130706433",
    "[2001:db8::1]:8000",
]


@pytest.mark.parametrize("host", MALFORMED)
def test_parse_host_refuses_malformed_values(host: str) -> None:
    with pytest.raises(InvalidArgument, match="malformed Host header"):
        parse_host(host)


@pytest.mark.parametrize(("host", "name"), LOOPBACK)
def test_parse_host_normalises_well_formed_values(host: str, name: str) -> None:
    assert parse_host(host) == name


def test_open_mode_answers_400_to_a_malformed_host_and_changes_nothing(
    client: TestClient, demo: Demo
) -> None:
    for host in MALFORMED:
        headers = {"Host": host}
        expect_error(client.get("/api/me", headers=headers), 400, "malformed Host header")
        answer = client.post("/api/queues/default/pause", headers=headers)
        expect_error(answer, 400, "malformed Host header")
        assert client.get("/", headers=headers).status_code == 400
    assert not any(q.paused for q in demo.store.queues())


def test_open_mode_answers_loopback_hosts_in_any_case(client: TestClient) -> None:
    for host, _ in LOOPBACK:
        answer = client.get("/api/me", headers={"Host": host})
        assert answer.status_code == 200, (host, answer.text)


def test_open_mode_refuses_well_formed_other_hosts_with_403(client: TestClient) -> None:
    for host in ELSEWHERE:
        expect_error(client.get("/api/me", headers={"Host": host}), 403, "loopback")
