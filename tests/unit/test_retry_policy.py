"""RetryPolicy: what a job carries about its retries, and how it is stored."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rota import InvalidArgument
from rota._validate import MAX_DURATION
from rota._wording import retry_text
from rota.models import Job, JobState
from rota.retry import DEFAULT_POLICY, RetryPolicy, encoded_policy, error_kind


class Flaky(ConnectionError):
    pass


def test_the_default_policy_is_stored_as_nothing() -> None:
    assert RetryPolicy().encode() is None
    assert RetryPolicy.decode(None) is DEFAULT_POLICY
    assert encoded_policy((1.0, 300.0), None, ()) is None


def test_a_policy_survives_its_stored_form() -> None:
    policy = RetryPolicy((0.5, 20.0), ("builtins.OSError",), ("builtins.TimeoutError",))
    text = policy.encode()
    assert text == (
        '{"backoff":[0.5,20.0],"retry_on":["builtins.OSError"],'
        '"no_retry_on":["builtins.TimeoutError"]}'
    )
    assert RetryPolicy.decode(text) == policy
    assert RetryPolicy.decode(RetryPolicy(retry_on=()).encode()) == RetryPolicy(retry_on=())


def test_every_backoff_a_task_accepts_can_be_stored() -> None:
    longest = (MAX_DURATION, MAX_DURATION)
    assert RetryPolicy.decode(encoded_policy(longest, None, ())).backoff == longest
    assert RetryPolicy.decode(encoded_policy((0.0, 0.0), None, ())).backoff == (0.0, 0.0)


def test_a_tasks_options_name_exception_classes_by_module_and_qualname() -> None:
    text = encoded_policy((2.0, 60.0), (Flaky,), (KeyError,))
    assert RetryPolicy.decode(text) == RetryPolicy(
        (2.0, 60.0), (f"{__name__}.Flaky",), ("builtins.KeyError",)
    )


SCRIPT = """
from rota.retry import error_kind

class BadRecord(ValueError):
    pass

print(error_kind(BadRecord))
"""


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (["sender.py"], "sender.BadRecord"),  # as `rota worker sender.py:app` loads it
        (["-m", "jobs.sender"], "jobs.sender.BadRecord"),
        (["-c", SCRIPT], "__main__.BadRecord"),  # no module a worker could load
    ],
)
def test_a_scripts_own_exception_classes_are_named_as_a_worker_imports_them(
    tmp_path: Path, command: list[str], expected: str
) -> None:
    (tmp_path / "sender.py").write_text(SCRIPT)
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "__init__.py").write_text("")
    (tmp_path / "jobs" / "sender.py").write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, *command], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == expected


def test_an_error_is_matched_by_its_class_or_a_base_class() -> None:
    kinds = tuple(error_kind(c) for c in Flaky.__mro__)
    assert RetryPolicy(retry_on=("builtins.OSError",)).refusal(kinds) is None
    assert RetryPolicy(retry_on=("builtins.KeyError",)).refusal(kinds) == "not in retry_on"
    assert RetryPolicy(no_retry_on=("builtins.ConnectionError",)).refusal(kinds) == (
        "in no_retry_on"
    )
    assert DEFAULT_POLICY.refusal(kinds) is None


def test_the_delay_follows_the_policys_backoff() -> None:
    policy = RetryPolicy((10.0, 25.0))
    assert [policy.delay(n, 0.0) for n in range(4)] == [0.0, 5.0, 10.0, 12.5]
    assert policy.delay(1, 0.999999) == pytest.approx(10.0)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{", "must be JSON"),
        ('{"backoff": [1]}', "backoff must be"),
        ('{"backoff": [3, 2]}', "backoff must be"),
        ('{"backoff": [true, 2]}', "backoff must be"),
        ('{"retry_on": "builtins.OSError"}', "as strings"),
        ('{"no_retry_on": [""]}', "as strings"),
        ('{"max": 1}', "not a retry policy"),
        ("[]", "not a retry policy"),
    ],
)
def test_text_encode_never_writes_is_refused_precisely(text: str, says: str) -> None:
    with pytest.raises(InvalidArgument, match=says):
        RetryPolicy.decode(text)


def _job(max_attempts: int, retry: str | None) -> Job:
    return Job("j", "t", "q", JobState.QUEUED, [], {}, 0, 0.0, 0.0, 0, max_attempts, 0, retry=retry)


@pytest.mark.parametrize(
    ("max_attempts", "retry", "text"),
    [
        (1, '{"backoff":[2.0,60.0]}', "none"),
        (4, None, "up to 3, backoff 1 s doubling to 300 s"),
        (
            2,
            '{"backoff":[0.5,30.0],"retry_on":["builtins.OSError","x.Flaky"],'
            '"no_retry_on":["builtins.TimeoutError"]}',
            "up to 1, backoff 0.5 s doubling to 30 s; only on OSError, Flaky; "
            "never on TimeoutError",
        ),
        (2, '{"retry_on":[]}', "up to 1, backoff 1 s doubling to 300 s; only on no error"),
        (3, "{bad", "up to 2 (the stored policy cannot be read: '{bad')"),
    ],
)
def test_a_jobs_retries_read_the_same_in_the_cli_and_the_dashboard(
    max_attempts: int, retry: str | None, text: str
) -> None:
    assert retry_text(_job(max_attempts, retry)) == text
