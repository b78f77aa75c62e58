"""The headings of a job's output split in runs by retries by hand."""

from __future__ import annotations

from rota._log_runs import LogHeadings
from rota.models import LogChunk

HISTORY = [
    {"event": "failed", "attempt": 1, "at": 10.0},
    {"event": "failed", "attempt": 2, "at": 20.0},
    {"event": "requeued", "by": "ann", "at": 30.0},
    {"event": "failed", "attempt": 1, "at": 40.0},
    {"event": "requeued", "by": None, "at": 50.0},
]


def _chunk(attempt: int, at: float, seq: int) -> LogChunk:
    return LogChunk("j", attempt, "stdout", f"{attempt}@{at:g}\n", at, seq)


def _shown(pairs: list[tuple[str | None, LogChunk]]) -> list[str]:
    return [line for h, c in pairs for line in ([h] if h else []) + [c.data.strip()]]


def test_a_whole_log_shows_each_run_in_turn_under_its_own_headings() -> None:
    # the store's order: by attempt, then seq
    chunks = [_chunk(1, 5, 1), _chunk(1, 35, 4), _chunk(1, 55, 6), _chunk(2, 15, 2)]
    headings = LogHeadings(HISTORY, lambda t: f"t{t:g}")
    assert headings.requeued
    assert _shown(headings.in_runs(chunks)) == [
        "--- attempt 1 ---",
        "1@5",
        "--- attempt 2 ---",
        "2@15",
        "--- attempt 1, after requeue by ann at t30 ---",
        "1@35",
        "--- attempt 1, after requeue at t50 ---",
        "1@55",
    ]
    assert headings.latest_shown() == 1 and headings.requeue_note() == ", after requeue at t50"


def test_chunks_read_page_by_page_keep_their_run_and_a_late_clock_does_not_go_back() -> None:
    headings = LogHeadings(HISTORY[:3], str)
    assert [headings.heading(c) for c in (_chunk(1, 5, 1), _chunk(1, 6, 2))] == [
        "--- attempt 1 ---",
        None,
    ]
    assert headings.latest_shown() is None, "the output to come is of the run after the requeue"
    # a chunk stamped before the requeue (a worker's clock behind) after one of the later run
    later, behind = _chunk(1, 31, 3), _chunk(1, 29, 4)
    assert headings.heading(later) == "--- attempt 1, after requeue by ann at 30.0 ---"
    assert headings.heading(behind) is None, "the same run: seq orders an attempt's chunks"
    assert headings.latest_shown() == 1


def test_without_a_requeue_only_attempt_headings() -> None:
    headings = LogHeadings(HISTORY[:2], str)
    assert not headings.requeued and headings.requeue_note() == ""
    pairs = headings.in_runs([_chunk(1, 5, 1), _chunk(2, 15, 2), _chunk(2, 16, 3)])
    assert [h for h, _ in pairs] == ["--- attempt 1 ---", "--- attempt 2 ---", None]
