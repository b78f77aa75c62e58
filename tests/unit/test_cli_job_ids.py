"""``rota jobs show/retry/cancel/delete`` take the short ids ``rota jobs list``
and the dashboard show, and word lost attempts as ``2 (1 lost)``."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import orjson
import pytest
from click.testing import CliRunner, Result

from helpers import wait_for
from rota.cli import main
from rota.models import JobState, NewJob, Outcome
from rota.stores import Store, open_store


@pytest.fixture
def cli_store(url: str) -> Iterator[tuple[str, Store]]:
    opened = open_store(url)
    yield url, opened
    opened.close()


def rota(url: str, *args: str) -> Result:
    runner = CliRunner(env={"ROTA_URL": None, "COLUMNS": "200", "TTY_COMPATIBLE": None})
    return runner.invoke(main, ["--url", url, *args], catch_exceptions=False)


def put(store: Store, job_id: str | None = None, **fields: object) -> str:
    job = NewJob(
        id=job_id or uuid.uuid4().hex,
        task="add",
        queue="default",
        payload=orjson.dumps({"args": [1, 2], "kwargs": {}}),
        **fields,  # type: ignore[arg-type]
    )
    [result] = store.enqueue([job])
    return result.id


def fields(out: str) -> dict[str, str]:
    """The ``name  value`` lines ``rota jobs show`` prints before the arguments."""
    head = out.split("\nargs\n")[0].splitlines()
    return {line.split(None, 1)[0]: line.split(None, 1)[1].strip() for line in head if " " in line}


def test_show_and_steer_by_unique_prefix(cli_store: tuple[str, Store]) -> None:
    url, store = cli_store
    job_id = put(store)
    shown = rota(url, "jobs", "show", job_id[:12])
    assert shown.exit_code == 0, shown.output
    assert fields(shown.stdout)["id"] == job_id

    cancelled = rota(url, "jobs", "cancel", job_id[:8])
    assert (cancelled.exit_code, cancelled.stdout) == (0, f"cancelled {job_id}\n")
    assert store.get_job(job_id).state is JobState.CANCELLED  # type: ignore[union-attr]
    retried = rota(url, "jobs", "retry", job_id[:6])
    assert (retried.exit_code, retried.stdout) == (0, f"retried {job_id}\n")
    deleted = rota(url, "jobs", "delete", job_id[:12])
    assert (deleted.exit_code, deleted.stdout) == (0, f"deleted {job_id}\n")
    assert store.get_job(job_id) is None


def test_ambiguous_prefix_lists_candidates_and_changes_nothing(
    cli_store: tuple[str, Store],
) -> None:
    url, store = cli_store
    one = put(store, "beef01" + "1" * 26)
    two = put(store, "beef01" + "2" * 26)
    other = put(store, "cafe01" + "3" * 26)
    for args in (("show", "beef01"), ("cancel", "cafe01", "beef01"), ("delete", "beef01")):
        result = rota(url, "jobs", *args)
        assert result.exit_code == 2, result.output
        assert result.stderr == (
            f"Error: job id prefix 'beef01' matches several jobs: {one}, {two}\n"
        )
    states = [job.state if job else None for job in store.get_jobs([one, two, other])]
    assert states == [JobState.QUEUED] * 3  # the cancel of the unique prefix did not run


def test_unknown_prefix_is_not_found(cli_store: tuple[str, Store]) -> None:
    url, store = cli_store
    put(store, "abcdef" + "0" * 26)
    shown = rota(url, "jobs", "show", "abcdee")
    assert (shown.exit_code, shown.stderr) == (1, "Error: job 'abcdee' not found\n")
    cancelled = rota(url, "jobs", "cancel", "abcdee")
    assert cancelled.exit_code == 1
    assert "could not cancel abcdee: not found" in cancelled.stderr


def test_a_prefix_shorter_than_six_characters_says_so(cli_store: tuple[str, Store]) -> None:
    url, store = cli_store
    job_id = put(store, "6ff950" + "0" * 26)
    reason = "no job has that id, and a prefix needs at least 6 characters"
    for command in ("show", "logs"):
        result = rota(url, "jobs", command, "6ff95")
        assert (result.exit_code, result.stderr) == (1, f"Error: job '6ff95' not found: {reason}\n")
    for command in ("cancel", "retry", "delete"):
        result = rota(url, "jobs", command, "6ff95")
        assert result.exit_code == 1
        assert f"could not {command} 6ff95: not found ({reason})" in result.stderr
    assert store.get_jobs([job_id])[0] is not None


def test_lost_attempts_read_as_lost(cli_store: tuple[str, Store]) -> None:
    url, store = cli_store
    job_id = put(store, lease=0.2, max_attempts=1, max_lost=3)
    assert [j.id for j in store.claim("gone-worker", ["default"], 1)] == [job_id]
    wait_for(lambda: job_id in store.recover(), timeout=10.0, what="the lease to expire")
    [claimed] = store.claim("worker", ["default"], 1)
    assert store.finish([Outcome(job_id, claimed.token, ok=True, result=b"3")]) == [True]

    listed = rota(url, "jobs", "list")
    row = next(line for line in listed.stdout.splitlines() if line.startswith(job_id))
    assert "2 (1 lost)" in row and "2/1" not in row
    shown = rota(url, "jobs", "show", job_id)
    assert fields(shown.stdout)["attempt"] == "2 (1 lost)"
