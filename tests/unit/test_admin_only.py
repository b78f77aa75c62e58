"""No module of the CLI or the web layer calls a store steering verb: they act
through app.admin, where validation and the audit log live."""

from __future__ import annotations

import ast
from pathlib import Path

import rota

STEERING = frozenset(
    {
        "pause_queue",
        "resume_queue",
        "set_paused",
        "set_queue_mode",
        "purge_queue",
        "retry",
        "retry_failed",
        "cancel",
        "delete",
        "set_limit",
        "reset_breaker",
        "upsert_schedule",
        "remove_schedule",
        "set_schedule_enabled",
        "fire_schedule",
        "enqueue",
        "put_user",
        "delete_user",
        "put_token",
        "delete_token",
        "append_audit",
        "purge_audit",
    }
)
ROOT = Path(rota.__file__).parent


def steering_calls(path: Path, root: Path = ROOT) -> list[str]:
    """``store.VERB(...)`` calls in ``path`` (any expression ending in ``.store``
    or a name ``store``), as ``file:line verb``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        is_store = (isinstance(owner, ast.Attribute) and owner.attr == "store") or (
            isinstance(owner, ast.Name) and owner.id == "store"
        )
        if is_store and node.func.attr in STEERING:
            found.append(f"{path.relative_to(root)}:{node.lineno} {node.func.attr}")
    return found


def test_cli_and_web_never_call_a_store_steering_verb() -> None:
    files = sorted((ROOT / "cli").glob("*.py")) + sorted((ROOT / "web").glob("*.py"))
    assert len(files) > 10
    assert [call for path in files for call in steering_calls(path)] == []


def test_the_check_finds_a_steering_call(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "def f(app, store):\n    app.store.pause_queue('q')\n    store.retry(['x'])\n"
    )
    assert steering_calls(sample, tmp_path) == ["sample.py:2 pause_queue", "sample.py:3 retry"]
