"""``rota audit``: the log of operator actions, newest first."""

from __future__ import annotations

import json
from collections.abc import Sequence

import click
from rich.table import Table

from rota.cli._support import (
    CliState,
    console,
    fmt_time,
    name_callback,
    note,
    pass_state,
    url_option,
)
from rota.models import AuditEntry

__all__ = ["audit", "audit_table"]


def audit_table(entries: Sequence[AuditEntry]) -> Table:
    """One row per entry: time, actor, role, origin, address, action, target, details."""
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("time", "actor", "role", "origin", "address", "action", "target", "details"):
        table.add_column(column)
    for e in entries:
        details = json.dumps(e.details, sort_keys=True) if e.details else ""
        table.add_row(
            fmt_time(e.at), e.actor, e.role, e.origin, e.address or "-", e.action, e.target, details
        )
    return table


@click.command()
@click.option("--actor", callback=name_callback("actor"), help="Only actions of this actor.")
@click.option(
    "--action", callback=name_callback("action"), help="Only this action, e.g. queue.pause."
)
@click.option(
    "--limit",
    "-n",
    type=click.IntRange(1, 1000),
    default=50,
    show_default=True,
    help="Show at most this many entries.",
)
@url_option
@pass_state
def audit(cli: CliState, actor: str | None, action: str | None, limit: int) -> None:
    """Who paused, retried, purged or changed what, when, and from where (newest first)."""
    entries, _ = cli.store_app().admin.audit(limit=limit, actor=actor, action=action)
    if not entries:
        note("no operator actions recorded" + (" that match" if actor or action else ""))
        return
    console().print(audit_table(entries))
