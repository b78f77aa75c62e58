"""``rota jobs export --format json``: one JSON array of the results, on every store."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

import rota
from rota import _json
from rota.cli import main
from rota.models import Outcome
from rota.stores import Store


def _results(store: Store, url: str, count: int) -> list[str]:
    """``count`` succeeded jobs of task ``add`` and one failed; their ids, oldest first."""
    app = rota.App(url)
    app.use_store(store)

    @app.task(name="add")
    def add(a: int, b: int) -> int:
        return a + b

    ids = [add.send(n, 1).id for n in range(count)]
    add.send(-1, -1)
    claimed = store.claim("test-worker", ["default"], count + 1)
    outcomes = [
        Outcome(
            job.id, job.token, ok=True, result=_json.dumps(sum(_json.loads(job.payload)["args"]))
        )
        for job in claimed
        if job.id in ids
    ]
    outcomes += [
        Outcome(job.id, job.token, ok=False, error="ValueError: boom")
        for job in claimed
        if job.id not in ids
    ]
    assert all(store.finish(outcomes))
    return ids


def _rota(url: str, *args: str) -> tuple[int, str, str]:
    runner = CliRunner(env={"ROTA_URL": None, "COLUMNS": None, "TTY_COMPATIBLE": None})
    result = runner.invoke(main, ["--url", url, *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_export_json_array_to_stdout(store: Store, url: str) -> None:
    ids = _results(store, url, 3)
    code, out, err = _rota(url, "jobs", "export", "--format", "json", "--task", "add")
    assert (code, err) == (0, "")
    rows = json.loads(out)
    assert [r["id"] for r in rows] == ids[::-1]  # newest first, the failed job left out
    assert [r["result"] for r in rows] == [3, 2, 1]
    assert rows[0]["args"] == [2, 1] and rows[0]["finished_at"].endswith("+00:00")


def test_export_json_array_to_a_file_counts_rows(store: Store, url: str, tmp_path: Path) -> None:
    ids = _results(store, url, 2)
    target = tmp_path / "out.json"
    code, out, err = _rota(url, "jobs", "export", "-f", "json", "-o", str(target))
    assert (code, out) == (0, "")
    assert err.strip() == f"exported 2 result(s) to {target}"
    assert {r["id"] for r in json.loads(target.read_text())} == set(ids)


def test_export_json_array_of_nothing_is_empty(store: Store, url: str) -> None:
    code, out, _ = _rota(url, "jobs", "export", "--format", "json", "--queue", "none")
    assert code == 0
    assert json.loads(out) == []


def test_export_format_must_be_known(store: Store, url: str) -> None:
    code, _, err = _rota(url, "jobs", "export", "--format", "xml")
    assert code == 2
    assert "'xml' is not one of 'jsonl', 'json', 'csv'" in err
    assert store.queues() == []
