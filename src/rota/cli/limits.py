"""``rota limits ...``: flow-control keys; change concurrency limits and rates,
close breakers."""

from __future__ import annotations

import re
from collections.abc import Sequence

import click
from rich.table import Table
from rich.text import Text

from rota.cli._actor import cli_actor
from rota.cli._support import (
    CliState,
    console,
    fmt_time,
    fmt_when,
    name_callback,
    note,
    pass_state,
    url_option,
)
from rota.models import LimitInfo

__all__ = ["limits", "limits_table"]


#: A rate given as a plain number: jobs a second.
_PER_SECOND = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def _running(info: LimitInfo) -> str:
    limit = "-" if info.concurrency is None else str(info.concurrency)
    text = f"{info.running}/{limit}"
    return text + " (set)" if info.override is not None else text


def _rate(info: LimitInfo) -> str:
    rate = info.rate_in_force
    if rate is None:
        return "-"
    text = f"{rate:g}/s burst {info.burst or 1}"
    return text + " (set)" if info.rate_override is not None else text


def _breaker(info: LimitInfo, now: float) -> Text:
    if info.open_until is None:
        return Text("closed" if info.failures else "-")
    if info.open_until > now:
        return Text(f"open until {fmt_when(info.open_until, now)}", style="bold red")
    return Text(f"half-open since {fmt_time(info.open_until)}", style="yellow")


def limits_table(infos: Sequence[LimitInfo], now: float) -> Table:
    """One row per key: running/limit, rate, tokens, breaker failures and state."""
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("key")
    table.add_column("running/limit", justify="right")
    table.add_column("rate")
    table.add_column("tokens", justify="right")
    table.add_column("failures", justify="right")
    table.add_column("breaker")
    for info in infos:
        tokens = "-" if info.tokens is None else f"{info.tokens:.1f}"
        table.add_row(
            info.key, _running(info), _rate(info), tokens, str(info.failures), _breaker(info, now)
        )
    return table


@click.group()
def limits() -> None:
    """Inspect and change flow-control limits, cluster-wide."""


@limits.command("list")
@url_option
@pass_state
def list_limits(cli: CliState) -> None:
    """Every flow-control key with its current state ("(set)": changed at run time).

    A key is listed once a job of it has been claimed, or a limit set on it:
    jobs sent but never claimed do not list theirs."""
    app = cli.store_app()
    infos = app.limits.list()
    if not infos:
        note(
            "no limit keys yet: a key appears once a job of it is claimed, "
            "or when a limit is set on it (rota limits set)"
        )
        return
    console().print(limits_table(infos, app.store.now()))


@limits.command("set", context_settings={"ignore_unknown_options": True})
@click.argument("key", callback=name_callback("limit key"))
@click.argument("limit", metavar="N", type=click.IntRange(min=0))
@url_option
@pass_state
def set_limit(cli: CliState, key: str, limit: int) -> None:
    """Let at most N jobs with KEY run at once across all workers (0 holds them all)."""
    cli.store_app().admin.set_limit(key, limit, by=cli_actor())
    click.echo(f"limit of {key} set to {limit}")


@limits.command("rate", context_settings={"ignore_unknown_options": True})
@click.argument("key", callback=name_callback("limit key"))
@click.argument("rate", metavar="RATE|clear")
@url_option
@pass_state
def set_rate(cli: CliState, key: str, rate: str) -> None:
    """Let jobs with KEY start at most RATE (e.g. 2/s, 100/m, 0.5) across all
    workers, in place of the rate they carry; 'clear' goes back to theirs."""
    rate = rate.strip()
    cleared = rate == "clear"
    spec = float(rate) if _PER_SECOND.fullmatch(rate) else rate  # 0.5: jobs a second
    cli.store_app().admin.set_rate(key, None if cleared else spec, by=cli_actor())
    done = f"rate of {key} back to the jobs' own" if cleared else f"rate of {key} set to {rate}"
    click.echo(done)


@limits.command("clear")
@click.argument("key", callback=name_callback("limit key"))
@url_option
@pass_state
def clear(cli: CliState, key: str) -> None:
    """Go back to the concurrency limit KEY's tasks declare."""
    cli.store_app().admin.clear_limit(key, by=cli_actor())
    click.echo(f"limit of {key} back to the declared value")


@limits.command("reset")
@click.argument("key", callback=name_callback("limit key"))
@url_option
@pass_state
def reset(cli: CliState, key: str) -> None:
    """Close the circuit breaker of KEY, so its jobs run again now (a key the
    store does not know is an error, as for the other limit commands)."""
    if cli.store_app().admin.reset_breaker(key, by=cli_actor()):
        click.echo(f"closed the breaker of {key}")
    else:
        note(f"the breaker of {key} was not open; nothing changed")
