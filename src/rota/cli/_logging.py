"""The log options of long-running commands: ``--quiet`` and ``--log-format``."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def log_options(f: F) -> F:
    """``--quiet`` and ``--log-format`` on a command."""
    f = click.option(
        "--log-format",
        type=click.Choice(["text", "json"]),
        default="text",
        show_default=True,
        help="Log lines as text, or as JSON objects (one per line).",
    )(f)
    return click.option(
        "--quiet",
        "-q",
        is_flag=True,
        help="Log only warnings and errors (of finished jobs, those that failed for good).",
    )(f)


def configure(level: str, quiet: bool, log_format: str, notices: bool = True) -> None:
    """Log to stderr from ``level`` up (warning when ``quiet``), as text or JSON;
    without the notices about the service's setup (:data:`SERVICE_NOTICE`,
    such as a store server without persistence) unless ``notices``: a pool's
    children after the first leave them to it."""
    from rota.stores.base import is_service_notice
    from rota.worker.joblog import BatchHandler, JsonFormatter, TextFormatter

    handler = BatchHandler(sys.stderr)
    formatter = JsonFormatter() if log_format == "json" else TextFormatter()
    handler.setFormatter(formatter)
    logging.basicConfig(level="WARNING" if quiet else level.upper(), handlers=[handler])
    if not notices:  # (a forked child keeps the handlers its parent configured)
        for installed in logging.getLogger().handlers:
            installed.addFilter(lambda record: not is_service_notice(record))
