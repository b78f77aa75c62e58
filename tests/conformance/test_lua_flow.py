"""The golden cases of tests/flow_cases.py against the Redis store's Lua rules.

The rules of lua/_limits.lua are called one by one through a small harness
(tests/conformance/lua/flow_rules.lua), built by the same assembly as every
script of the store, and replayed exactly as the unit tests replay rota.flow,
so the two implementations answer the same table.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

redis = pytest.importorskip("redis")

from backends import drop_store, store_url  # noqa: E402
from flow_cases import (  # noqa: E402
    BREAKER_CASES,
    BREAKER_RUNS,
    BUCKET_RUNS,
    BreakerCase,
    BreakerRun,
    BucketRun,
    breaker_room_of,
    replay_breaker,
    replay_bucket,
)
from rota.flow import Bucket  # noqa: E402
from rota.stores.redis import scripts  # noqa: E402
from rota.stores.redis.keys import Keys  # noqa: E402

HARNESS = Path(__file__).with_name("lua") / "flow_rules.lua"

Arg = float | int | bool | None


def _encode(value: Arg) -> str:
    """An argument as the harness reads it: "" for None, "1"/"0" for a flag,
    a number in full precision."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    return repr(value)


class LuaRules:
    """The Lua rules, with the signatures of :mod:`rota.flow`."""

    def __init__(self, client: Any, prefix: str) -> None:
        self.client = client
        self.prefix = prefix
        self.library = scripts.build({"flow_rules": HARNESS.read_text()})
        scripts.load(client, self.library)

    def _call(self, rule: str, *args: Arg) -> list[float | None]:
        reply = self.client.fcall(
            self.library.function("flow_rules"),
            1,
            self.prefix,
            rule,
            *(_encode(a) for a in args),
        )
        return [None if raw == b"" else float(raw) for raw in reply]

    def refill(self, bucket: Bucket | None, rate: float, burst: int, now: float) -> Bucket:
        tokens, at = (None, None) if bucket is None else (bucket.tokens, bucket.at)
        new_tokens, new_at = self._call("refill", tokens, at, rate, burst, now)
        assert new_tokens is not None and new_at is not None
        return Bucket(new_tokens, new_at)

    def take(self, bucket: Bucket) -> Bucket | None:
        tokens, *at = self._call("take", bucket.tokens, bucket.at)
        if tokens is None:
            return None
        assert at[0] is not None
        return Bucket(tokens, at[0])

    def breaker_room(
        self,
        failures: int,
        open_until: float | None,
        inflight: int,
        probe_running: bool,
        threshold: int,
        now: float,
    ) -> int:
        (room,) = self._call(
            "breaker_room", failures, open_until, inflight, probe_running, threshold, now
        )
        assert room is not None and room == int(room)
        return int(room)

    def breaker_after(
        self,
        failures: int,
        open_until: float | None,
        ok: bool,
        threshold: int,
        cooldown: float,
        now: float,
    ) -> tuple[int, float | None]:
        count, until = self._call(
            "breaker_after", failures, open_until, ok, threshold, cooldown, now
        )
        assert count is not None and count == int(count)
        return int(count), until


@pytest.fixture(scope="module")
def lua(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LuaRules]:
    url = store_url("redis", tmp_path_factory.mktemp("lua-flow"))
    client = redis.Redis.from_url(url.split("?", 1)[0])
    rules = LuaRules(client, Keys(url.split("namespace=", 1)[1]).prefix)
    yield rules  # (tests/conftest.py unloads its library once every test process is done)
    client.close()
    drop_store("redis", url)


@pytest.mark.parametrize("run", BUCKET_RUNS, ids=lambda run: run.name)
def test_bucket_golden_cases(lua: LuaRules, run: BucketRun) -> None:
    assert replay_bucket(lua, run) == list(run.steps)


@pytest.mark.parametrize("run", BREAKER_RUNS, ids=lambda run: run.name)
def test_breaker_golden_cases(lua: LuaRules, run: BreakerRun) -> None:
    assert replay_breaker(lua, run) == list(run.steps)


@pytest.mark.parametrize("case", BREAKER_CASES, ids=lambda case: case.name)
def test_breaker_room_golden_cases(lua: LuaRules, case: BreakerCase) -> None:
    assert breaker_room_of(lua, case, now=1000.0) == case.room


def test_the_harness_writes_nothing(lua: LuaRules) -> None:
    """The rules are pure: calling them leaves the namespace empty."""
    lua.refill(Bucket(1.0, 2.0), 1.0, 5, 3.0)
    lua.breaker_after(2, None, False, 3, 10.0, 4.0)
    client = lua.client
    assert list(client.scan_iter(match=f"{lua.prefix}*", count=1000)) == []
