"""Decoding a stored payload: what rota wrote decodes exactly; anything else
is a CorruptJob (never another exception), and inspection reads it as empty."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rota import _payload
from rota.errors import CorruptJob, RotaError

JOB = "job-1"

scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.text()
json_values = st.recursive(
    scalars | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)
BOUNDED = settings(max_examples=250, deadline=None)


@pytest.mark.parametrize(
    ("raw", "args", "kwargs"),
    [
        (b'{"args": [1, "a"], "kwargs": {"x": null}}', [1, "a"], {"x": None}),
        (b'{"args": []}', [], {}),
        (b'{"kwargs": {"k": [1]}}', [], {"k": [1]}),
        (b"{}", [], {}),
        ('{"args": ["caf\u00e9"]}', ["caf\u00e9"], {}),
    ],
)
def test_what_rota_writes_decodes_to_its_arguments(
    raw: bytes | str, args: list[Any], kwargs: dict[str, Any]
) -> None:
    assert _payload.decode(JOB, raw) == (args, kwargs)
    assert _payload.read(JOB, raw) == (args, kwargs, None)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b'{"args": ["\xff"]}', "not UTF-8 JSON"),
        ('{"args": ["\udcff"]}', "not UTF-8 JSON"),
        (b'{"args": [1, 2', "not UTF-8 JSON"),
        (b"", "not UTF-8 JSON"),
        (b"[" * 5000 + b"]" * 5000, "not UTF-8 JSON"),
        (b"[1, 2]", "expected a JSON object, got list"),
        (b"null", "expected a JSON object, got null"),
        (b'"args"', "expected a JSON object, got str"),
        (b'{"args": 5}', "'args' must be a JSON list, got int"),
        (b'{"args": null}', "'args' must be a JSON list, got null"),
        (b'{"kwargs": []}', "'kwargs' must be a JSON object, got list"),
        (b'{"args": [], "extra": 1}', "unexpected keys ['extra']"),
        (None, "the job has no payload"),
    ],
)
def test_anything_else_is_a_corrupt_job_naming_the_job_and_the_reason(
    raw: bytes | str | None, reason: str
) -> None:
    with pytest.raises(CorruptJob) as caught:
        _payload.decode(JOB, raw)
    assert caught.value.job_id == JOB
    assert reason in caught.value.reason
    assert str(caught.value).startswith(f"job {JOB} has a corrupt payload: ")
    assert _payload.read(JOB, raw) == ([], {}, f"CorruptJob: {caught.value}")


def test_a_long_corrupt_payload_is_quoted_only_in_part() -> None:
    with pytest.raises(CorruptJob) as caught:
        _payload.decode(JOB, b"[" + b"1," * 10_000)
    assert len(caught.value.reason) < 300 and caught.value.reason.endswith("...")


def test_stored_results_histories_and_limits_read_without_raising() -> None:
    assert _payload.read_json(b'{"a": 1}', "result") == ({"a": 1}, None)
    assert _payload.read_json(None, "result") == (None, None)
    value, note = _payload.read_json(b"{", "result")
    assert value is None and note is not None and note.startswith("the stored result is not")
    assert _payload.read_history(b'[{"attempt": 1}]') == (({"attempt": 1},), None)
    assert _payload.read_history(b"[1]")[0] == ()
    assert _payload.read_history(b"[1]")[1] is not None
    limits = b'{"c": [["a", 2]], "r": [["b", 1.0, 1], ["a", 1.0, 1]], "b": "x"}'
    assert _payload.read_limit_keys(limits) == ("a", "b")
    assert _payload.read_limit_keys(b"[1]") == ()
    assert _payload.read_limit_keys(b"") == ()


def _decodes_or_is_corrupt(raw: bytes | str) -> None:
    try:
        args, kwargs = _payload.decode(JOB, raw)
    except CorruptJob as exc:
        assert exc.job_id == JOB
        assert _payload.read(JOB, raw)[2] == f"CorruptJob: {exc}"
        return
    stored = orjson.loads(raw)
    assert set(stored) <= {"args", "kwargs"}
    assert (args, kwargs) == (stored.get("args", []), stored.get("kwargs", {}))


@BOUNDED
@given(st.binary(max_size=200))
def test_fuzz_any_bytes_decode_or_are_a_corrupt_job(raw: bytes) -> None:
    _decodes_or_is_corrupt(raw)


@BOUNDED
@given(json_values)
def test_fuzz_any_json_value_decodes_or_is_a_corrupt_job(value: Any) -> None:
    _decodes_or_is_corrupt(orjson.dumps(value))


@BOUNDED
@given(
    st.dictionaries(st.sampled_from(["args", "kwargs", "other"]), json_values, max_size=3),
    st.integers(0, 40),
)
def test_fuzz_payload_shaped_json_and_its_truncations(value: dict[str, Any], cut: int) -> None:
    raw = orjson.dumps(value)
    _decodes_or_is_corrupt(raw)
    _decodes_or_is_corrupt(raw[: max(0, len(raw) - cut)])
    _decodes_or_is_corrupt(raw.decode())


@BOUNDED
@given(st.lists(json_values, max_size=4), st.dictionaries(st.text(), json_values, max_size=4))
def test_fuzz_every_payload_rota_writes_decodes_exactly(
    args: list[Any], kwargs: dict[str, Any]
) -> None:
    raw = orjson.dumps({"args": args, "kwargs": kwargs})
    assert _payload.decode(JOB, raw) == (args, kwargs)


def test_corrupt_job_is_a_rota_error() -> None:
    assert issubclass(CorruptJob, RotaError)
