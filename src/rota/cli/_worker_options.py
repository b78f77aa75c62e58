"""The options of a running worker that ``rota worker`` and ``rota run`` share:
defined once here, so the two commands take the same names, defaults,
ranges and help."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from rota.cli._support import duration_callback
from rota.diagnose import HEARTBEAT_MAX, LOST_AFTER
from rota.worker.ahead import HOLD_FOR, HOLD_MAX

F = TypeVar("F", bound=Callable[..., Any])

LOG_LEVELS = ("debug", "info", "warning", "error")


def worker_options(f: F) -> F:
    """``--prefetch``, ``--grace``, ``--host-grace``, ``--heartbeat``,
    ``--max-cpu`` and ``--max-mem``: how the worker claims, stops, reports
    and holds back (the :class:`rota.worker.Worker` arguments of the same
    names)."""
    options = [
        click.option(
            "--prefetch",
            type=click.IntRange(min=0),
            default=None,
            help="Jobs this worker may hold beyond its slots, waiting for one, so a claim "
            "brings several (released at shutdown). Default: as many as its slots free within "
            f"{HOLD_FOR * 1000:g} ms at its jobs' average run time, {HOLD_MAX} at most (none "
            "while jobs are long).",
        ),
        click.option(
            "--grace",
            metavar="SECONDS",
            default="30",
            show_default=True,
            callback=duration_callback,
            help="On SIGTERM, how long running jobs may take to finish before they are released.",
        ),
        click.option(
            "--host-grace",
            metavar="SECONDS",
            default="300",
            show_default=True,
            callback=duration_callback,
            help="Run jobs sent to another host once no worker of that host has served "
            "their queue for this long.",
        ),
        click.option(
            "--heartbeat",
            metavar="SECONDS",
            type=click.FloatRange(0.1, HEARTBEAT_MAX),
            default=5.0,
            show_default=True,
            help="How often the worker records its state, counts and load in the store "
            f"(the dashboard's workers; at most {HEARTBEAT_MAX:g}: a worker silent for "
            f"{LOST_AFTER:g} s shows as lost).",
        ),
        click.option(
            "--max-cpu",
            metavar="PCT",
            type=click.FloatRange(0, 100, min_open=True),
            help="Stop claiming while the host's CPU use is above this percentage.",
        ),
        click.option(
            "--max-mem",
            metavar="PCT",
            type=click.FloatRange(0, 100, min_open=True),
            help="Stop claiming while the host's memory use is above this percentage.",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def log_level_option(f: F) -> F:
    """``--log-level``: the lowest level of the log messages shown on stderr."""
    return click.option(
        "--log-level",
        type=click.Choice(LOG_LEVELS, case_sensitive=False),
        default="info",
        show_default=True,
        help="Log messages from this level up, on stderr.",
    )(f)
