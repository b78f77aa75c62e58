"""The export formats: CSV cells a spreadsheet would evaluate are neutralised, JSON Lines
and JSON arrays kept; every format is written one job at a time."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest

from helpers import shown_job
from rota import export
from rota.errors import InvalidArgument
from rota.models import Job

HOSTILE = ["=1+1", "+1", "-2+3", "@SUM(A1)", "\tx", "\rx", '=HYPERLINK("http://x")']


def job(result: Any, task: str = "fetch", args: list[Any] | None = None) -> Job:
    return shown_job(
        task=task, args=args if args is not None else [], finished_at=1.5, result=result
    )


def csv_row(row_job: Job) -> dict[str, str]:
    text = "".join(export.lines("csv", [row_job]))
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert len(rows) == 1
    return rows[0]


@pytest.mark.parametrize("value", HOSTILE)
def test_csv_cells_that_start_a_formula_get_a_quote(value: str) -> None:
    row = csv_row(job(value, task=value))
    assert row["result"] == "'" + value
    assert row["task"] == "'" + value


@pytest.mark.parametrize("value", HOSTILE)
def test_json_lines_are_never_altered(value: str) -> None:
    row = json.loads("".join(export.lines("jsonl", [job(value, task=value)])))
    assert row["result"] == value
    assert row["task"] == value


def test_json_text_of_lists_is_left_as_it_is() -> None:
    # JSON text of a list starts with "[", which no spreadsheet evaluates.
    assert csv_row(job(["=1+1"]))["result"] == '["=1+1"]'
    assert csv_row(job(None, args=["-1"]))["args"] == '["-1"]'


def test_plain_values_and_numbers_are_written_as_they_are() -> None:
    assert csv_row(job("a=b"))["result"] == "a=b"
    assert csv_row(job(-5))["result"] == "-5"
    assert csv_row(job(-2.5))["result"] == "-2.5"
    assert csv_row(job(True))["result"] == "true"
    row = csv_row(job(None))
    assert row["result"] == ""
    assert row["finished_at"] == "1970-01-01T00:00:01.500+00:00"


def test_unknown_format_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="unknown export format 'xlsx'"):
        export.lines("xlsx", [job(1)])


@pytest.mark.parametrize("count", [0, 1, 3])
def test_json_array_is_valid_json_of_every_row(count: int) -> None:
    jobs = [job(n, args=[n]) for n in range(count)]
    text = "".join(export.lines("json", jobs))
    rows = json.loads(text)
    assert [r["result"] for r in rows] == list(range(count))
    assert all(list(r) == list(export.FIELDS) for r in rows)
    assert text.endswith("]\n")


def test_json_array_reads_one_job_per_piece() -> None:
    pulled: list[int] = []

    def jobs() -> Any:
        for n in range(3):
            pulled.append(n)
            yield job(n)

    pieces = export.lines("json", jobs())
    assert next(pieces).startswith("[\n{") and pulled == [0]
    assert next(pieces).startswith(",\n{") and pulled == [0, 1]
    assert "".join(pieces).endswith("\n]\n") and pulled == [0, 1, 2]


def test_csv_without_rows_is_its_header() -> None:
    assert "".join(export.lines("csv", [])) == ",".join(export.FIELDS) + "\r\n"
