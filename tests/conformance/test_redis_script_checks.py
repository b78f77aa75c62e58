"""Every Redis script checks all its arguments before its first write: each
is called directly with hostile ARGV, and no key of the namespace changes
(DUMP of every key before and after)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backends import drop_store, store_url
from conformance.support import claim, new_job, schedule
from rota.errors import InvalidArgument
from rota.models import ConcurrencyKey, Outcome
from rota.stores import Store, open_store
from rota.stores.redis import scripts


def _job(**changes: str) -> list[str]:
    """One job's 19 enqueue fields (L.NEW_FIELDS), valid unless changed."""
    fields = {
        "id": "hostile", "task": "task", "queue": "default", "payload": "{}",
        "priority": "0", "delay": "0.0", "run_at": "", "max_attempts": "1",
        "max_lost": "3", "lease": "30.0", "timeout": "", "limits": "", "fair": "",
        "ukey": "", "ufor": "", "schedule": "", "fire_time": "", "host": "", "retry": "",
    }  # fmt: skip
    fields.update(changes)
    return list(fields.values())


def _outcome(retry_in: str = "", flags: str = "00100", job_id: str = "runs") -> list[str]:
    return [job_id, "token", flags, "", "boom", "", retry_in, "builtins.ValueError"]


#: Hostile ARGV per script (heartbeat.lua, the worker record, and queues.lua,
#: which takes none, are left out).
CASES: dict[str, list[list[str]]] = {
    "enqueue": [
        ["", "1", *_job(lease="nan")],
        ["", "1", *_job(lease="inf")],
        ["", "1", *_job(lease="0")],
        ["", "1", *_job(priority="1e400")],
        ["", "1", *_job(priority="9223372036854775808")],
        ["", "1", *_job(max_attempts="-1")],
        ["", "1", *_job(max_lost="0")],
        ["", "1", *_job(id="")],
        ["", "1", *_job(queue="")],
        ["", "1", *_job(run_at="nan")],
        ["", "1", *_job(timeout="-inf")],
        ["", "1", *_job(ufor="nan")],
        ["", "1", *_job(limits='{"c": [["k", -1]], "r": [], "b": []}')],
        ["", "1", *_job(limits='{"c": [], "r": [["r", 0, 1]], "b": []}')],
        ["", "1", *_job(limits="not json")],
        ["", "1", *_job(limits='{"c": [], "r": [], "b": [["b", 1, 1.0, "ValueError"]]}')],
        ["", "1", *_job(limits='{"c": [], "r": [], "b": [["b", 1, 1.0, [""]]]}')],
        ["", "2", *_job(id="good"), *_job(lease="nan")],
        ["", "2", *_job(id="good")],
        ["", "nan", *_job()],
        ["", "-1"],
    ],
    "claim": [
        ["w", "nan", "tok", "", "0", "default"],
        ["w", "1.5", "tok", "", "0", "default"],
        ["w", "9007199254740993", "tok", "", "0", "default"],
        ["", "1", "tok", "", "0", "default"],
        ["w", "1", "", "", "0", "default"],
        ["w", "1", "tok", "", "inf", "default"],
        ["w", "1", "tok", "", "0"],
        ["w", "1", "tok", "", "0", "default", ""],
    ],
    "extend": [["runs"], ["", "token"], ["runs", ""], []],
    "release": [["", "runs"], ["", "", "token"], ["", "runs", ""]],
    "finish": [
        ["", *_outcome("nan")],
        ["", *_outcome("inf")],
        ["", *_outcome("-1")],
        ["", *_outcome(flags="1x000")],
        ["", *_outcome(flags="0010")],
        ["", *_outcome(flags="00101")],  # a snooze without retry_in
        ["", *_outcome("1", flags="10001")],  # a snooze that succeeded
        ["", *_outcome(job_id="")],
        ["", *_outcome(), "extra"],
        [""],
    ],
    "recover": [["0"], ["nan"], ["-5"], []],
    "fire_schedule": [
        ["", "nightly", "nan", "", "0"],
        ["", "nightly", "1000", "inf", "0"],
        ["", "", "1000", "2000", "0"],
        ["", "nightly", "1000", "2000", "2"],
        ["", "nightly", "1000", "2000", "1", *_job(lease="nan")],
        ["", "nightly", "1000", "2000", "1"],
    ],
    "run_schedule": [
        ["", "", *_job()],
        ["", "nightly", *_job(lease="nan")],
        ["", "nightly", *_job(priority="1.5")],
        ["", "nightly", *_job(), "extra"],
        ["", "nightly"],
    ],
    "upsert_schedule": [
        ["nightly", "task", "{}", "{}", "nan", "1", "coalesce", "", "allow", "0", "{}"],
        ["nightly", "task", "{}", "{}", "1", "2", "coalesce", "", "allow", "0", "{}"],
        ["nightly", "task", "{}", "{}", "1", "1", "coalesce", "-1", "allow", "0", "{}"],
        ["nightly", "task", "{}", "{}", "1", "1", "coalesce", "", "allow", "inf", "{}"],
        ["", "task", "{}", "{}", "1", "1", "coalesce", "", "allow", "0", "{}"],
        ["nightly", "task"],
    ],
    "set_limit": [["k", "-1"], ["k", "1.5"], ["", "1"], ["k", "1e400"], ["k"]],
    "set_rate": [["k", "0"], ["k", "-1"], ["k", "nan"], ["", "1"], ["k", "1e400"], ["k"]],
    "purge_finished": [["nan", "10"], ["1", "0"], ["-1", "10"], ["inf", "10"]],
    "purge_queue": [["", "", "10"], ["default", "", "0"], ["default", "nan", "10"]],
    "retry_failed": [
        ["", "", "0", "", "", "", ""],
        ["", "", "10", "-1", "", "", ""],
        ["", "", "nan", "", "", "", ""],
        ["", "", "10", "", "", "1.5", ""],
        ["", "", "10", "", "", "", "nan"],
        ["", "", "10", "", ""],
    ],
    "cancel": [["", "waiting", ""], ["alice"], []],
    "delete": [["failed", ""], []],
    "retry": [["", "failed", ""], [""], []],
    "set_queue_mode": [["", "paused"], ["default", "stopped"], ["default", ""], ["default"]],
    "set_schedule_enabled": [["nightly", "yes"], ["", "1"]],
    "remove_schedule": [[""], []],
    "reset_breaker": [[""], []],
    "stop_waiting": [[""], []],
    "remove_worker": [[""], []],
    "reclaim_inbox": [["", "tok", "default"], ["w", "", "default"], ["w", "tok"]],
    "put_user": [["", "admin", "hash", "1"], ["ann", "", "hash", "1"], ["ann", "admin", "hash"]],
    "delete_user": [[""], []],
    "put_token": [["", "ci", "h"], ["ann", "", "h"], ["ann", "ci", ""], ["ann", "ci"]],
    "delete_token": [["", "ci"], ["ann", ""], ["ann"]],
    "append_logs": [
        ["0", "runs", "1", "stdout", "0", "x"],
        ["nan", "runs", "1", "stdout", "0", "x"],
        ["100", "", "1", "stdout", "0", "x"],
        ["100", "runs", "-1", "stdout", "0", "x"],
        ["100", "runs", "1", "stdin", "0", "x"],
        ["100", "runs", "1", "stdout", "nan", "x"],
        ["100", "runs", "1", "stdout", "0"],
        ["100"],
        ["100", "runs", "1", "stdout", "0", "x", "runs", "1.5", "stdout", "0", "y"],
    ],
    "list_jobs": [
        ["0", "", "10", "", "", "", "", "", "1"],
        ["10", "", "nan", "", "", "", "", "", "1"],
    ],
}


#: Scripts that do not check their arguments yet.


@pytest.fixture
def redis_store(tmp_path: Path) -> Iterator[Store]:
    """A Redis store with jobs in several states, a paused queue and a schedule."""
    url = store_url("redis", tmp_path)
    store = open_store(url)
    try:
        store.enqueue([new_job(job_id="waiting", concurrency=(ConcurrencyKey("k", 2),))])
        store.enqueue(
            [new_job(job_id="runs", queue="work"), new_job(job_id="failed", queue="work")]
        )
        claimed = {job.id: job for job in claim(store, ["work"], 2)}
        store.finish([Outcome("failed", claimed["failed"].token, ok=False, error="x")])
        store.pause_queue("paused")
        store.upsert_schedule(schedule("nightly", 1_000.0))
        yield store
    finally:
        store.close()
        drop_store("redis", url)


def dump(store: Any) -> dict[bytes, bytes]:
    """Every key of the store's namespace with its DUMP."""
    client = store._client
    keys = sorted(client.scan_iter(match=f"{store.keys.prefix}*", count=1000))
    return {key: client.dump(key) for key in keys}


def test_every_script_has_hostile_cases() -> None:
    assert set(CASES) == set(scripts.names()) - {"heartbeat", "queues"}


@pytest.mark.parametrize(
    ("name", "argv"),
    [(name, argv) for name, cases in CASES.items() for argv in cases],
    ids=lambda v: v if isinstance(v, str) else repr(v)[:60],
)
def test_script_refuses_hostile_arguments(redis_store: Any, name: str, argv: list[str]) -> None:
    before = dump(redis_store)
    with pytest.raises(InvalidArgument):
        redis_store._scripts.run(name, argv)
    assert dump(redis_store) == before


@pytest.mark.parametrize(
    ("name", "argv", "message"),
    [
        ("enqueue", ["", "1", *_job(lease="nan")], 'job "hostile": lease must be a number from 0'),
        ("enqueue", ["", "1", *_job(queue="")], 'job "hostile": queue must be a non-empty string'),
        (
            "enqueue",
            ["", "1", *_job(limits='{"c": [["k", -1]], "r": [], "b": []}')],
            'job "hostile": concurrency limit must be an integer from 0',
        ),
        ("enqueue", ["", "1", *_job(id="")], "job id must be a non-empty string"),
        ("extend", ["runs", ""], 'token of job "runs" must be a non-empty string, not ""'),
    ],
)
def test_a_refusal_names_the_job_and_the_field(
    redis_store: Any, name: str, argv: list[str], message: str
) -> None:
    """The name of a refused field is made only on refusal, and still says
    which job and which field."""
    with pytest.raises(InvalidArgument) as refused:
        redis_store._scripts.run(name, argv)
    assert str(refused.value).startswith(message), str(refused.value)
