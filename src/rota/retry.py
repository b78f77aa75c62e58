"""When a failed attempt is tried again: the retry policy a job carries, and
the backoff between attempts (exponential, capped, with jitter).

The policy is fixed when the job is sent (the task's options with any
per-call override) and stored with the job, so the worker that runs an
attempt decides about a retry from the job alone, without the task's
registration.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rota import _json, _validate
from rota.errors import InvalidArgument

#: The backoff of a task that names none: 1 s doubling up to 5 min.
DEFAULT_BACKOFF = (1.0, 300.0)


def backoff_delay(failures: int, base: float, cap: float, rand: float) -> float:
    """Seconds to wait before the attempt after ``failures`` failed ones.

    The delay doubles with each failure from ``base`` up to ``cap``; ``rand`` in
    [0, 1) spreads it over the upper half of that ("equal jitter"), so retries
    of many jobs that failed together do not arrive together.
    """
    if failures < 1:
        return 0.0
    ceiling = min(cap, base * 2.0 ** min(failures - 1, 64))
    return ceiling / 2.0 + ceiling / 2.0 * rand


def error_kind(cls: type) -> str:
    """How a policy names an exception class: ``module.qualname``.

    A class of the script Python runs (``__main__``) is named by the module
    that script is when a worker loads it (``python send.py`` and ``rota
    worker send.py:app`` both say ``send``; ``python -m pkg.send`` says
    ``pkg.send``), so that the sender's names match the worker's errors."""
    module = cls.__module__
    if module == "__main__":
        module = _main_module()
    return f"{module}.{cls.__qualname__}"


def _main_module() -> str:
    """The importable name of the running script (``__main__`` when it has
    none: an interactive session, ``python -c``)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name and spec.name != "__main__":
        return str(spec.name)
    path = getattr(main, "__file__", None)
    return Path(path).stem if path else "__main__"


@functools.cache
def error_kinds(classes: tuple[type, ...]) -> tuple[str, ...]:
    """:func:`error_kind` of each of ``classes`` (cached: a task sends many jobs)."""
    return tuple(error_kind(cls) for cls in classes)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How a job's failed attempts are retried, while attempts remain.

    ``backoff`` is ``(base, cap)`` in seconds for :func:`backoff_delay`.
    ``retry_on`` (None: every error) and ``no_retry_on`` name exception
    classes by :func:`error_kind`; an error is matched by its class or any
    base class.
    """

    backoff: tuple[float, float] = DEFAULT_BACKOFF
    retry_on: tuple[str, ...] | None = None
    no_retry_on: tuple[str, ...] = ()

    def refusal(self, kinds: tuple[str, ...]) -> str | None:
        """Why an error of ``kinds`` (its class and base classes, as
        :func:`error_kind`) is not retried, or None when it may be."""
        if any(kind in kinds for kind in self.no_retry_on):
            return "in no_retry_on"
        if self.retry_on is not None and not any(kind in kinds for kind in self.retry_on):
            return "not in retry_on"
        return None

    def delay(self, failures: int, rand: float) -> float:
        """:func:`backoff_delay` with this policy's backoff."""
        return backoff_delay(failures, self.backoff[0], self.backoff[1], rand)

    def encode(self) -> str | None:
        """The policy as stored with a job: compact JSON naming what differs
        from the default, or None for the default policy."""
        fields: dict[str, Any] = {}
        if self.backoff != DEFAULT_BACKOFF:
            fields["backoff"] = list(self.backoff)
        if self.retry_on is not None:
            fields["retry_on"] = list(self.retry_on)
        if self.no_retry_on:
            fields["no_retry_on"] = list(self.no_retry_on)
        return _json.dumps(fields).decode() if fields else None

    @classmethod
    def decode(cls, text: str | None) -> RetryPolicy:
        """The policy :meth:`encode` wrote (None: the default); raises
        :class:`InvalidArgument` for text it could not have written."""
        if text is None:
            return DEFAULT_POLICY
        try:
            fields = _json.loads(text)
        except ValueError:
            raise InvalidArgument(f"a retry policy must be JSON, not {text!r}") from None
        if not isinstance(fields, dict) or set(fields) - {"backoff", "retry_on", "no_retry_on"}:
            raise InvalidArgument(f"not a retry policy: {text!r}")
        backoff = fields.get("backoff", DEFAULT_BACKOFF)
        if (
            not isinstance(backoff, list | tuple)
            or len(backoff) != 2
            or not all(_seconds(x) for x in backoff)
            or backoff[0] > backoff[1]
        ):
            raise InvalidArgument(f"a retry policy's backoff must be [base, max], in {text!r}")
        retry_on = fields.get("retry_on")
        return cls(
            (float(backoff[0]), float(backoff[1])),
            None if retry_on is None else _kinds(retry_on, text),
            _kinds(fields.get("no_retry_on", []), text),
        )


DEFAULT_POLICY = RetryPolicy()


def _seconds(value: object) -> bool:
    """A duration a task's backoff may hold (as ``parse_duration`` allows)."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and 0 <= value <= _validate.MAX_DURATION
    )


def _kinds(value: object, text: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(k, str) and k for k in value):
        raise InvalidArgument(f"a retry policy names exception classes as strings, in {text!r}")
    return tuple(value)


@functools.cache
def encoded_policy(
    backoff: tuple[float, float],
    retry_on: tuple[type[BaseException], ...] | None,
    no_retry_on: tuple[type[BaseException], ...],
) -> str | None:
    """The stored form of a task's retry options (cached: a task sends many jobs)."""
    return RetryPolicy(
        backoff,
        None if retry_on is None else error_kinds(retry_on),
        error_kinds(no_retry_on),
    ).encode()
