"""``rota queues ...``: counts per queue; pause, resume, set the mode of and purge a queue."""

from __future__ import annotations

from collections.abc import Sequence

import click
from rich.table import Table
from rich.text import Text

from rota.app import App
from rota.cli._actor import cli_actor
from rota.cli._progress import counted
from rota.cli._support import (
    CliState,
    console,
    name_callback,
    note,
    pass_state,
    read_url_option,
    url_option,
)
from rota.diagnose import LOST_AFTER
from rota.models import QUEUE_MODES, JobState, QueueInfo

__all__ = ["queues", "queues_table"]

_COUNTED = (
    JobState.SCHEDULED,
    JobState.QUEUED,
    JobState.RUNNING,
    JobState.SUCCEEDED,
    JobState.FAILED,
    JobState.CANCELLED,
)
_MODE_STYLES = {"paused": "bold yellow", "debug": "bold magenta"}


def queues_table(infos: Sequence[QueueInfo]) -> Table:
    """One row per queue: its mode, the failed job that paused it in debug
    mode, and its job counts by state."""
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("queue")
    table.add_column("mode")
    table.add_column("debug job")
    for state in _COUNTED:
        table.add_column(state.value, justify="right")
    for info in infos:
        mode = Text(info.mode, style=_MODE_STYLES.get(info.mode, ""))
        counts = [str(info.counts.get(state, 0)) for state in _COUNTED]
        table.add_row(info.name, mode, (info.debug_job or "-")[:12], *counts)
    return table


@click.group()
def queues() -> None:
    """Inspect and steer queues."""


@queues.command("list")
@url_option
@read_url_option
@pass_state
def list_queues(cli: CliState) -> None:
    """Every queue with its job counts by state."""
    infos = cli.store_app().reader.queues()
    if not infos:
        note("no queues yet: send a job first")
        return
    console().print(queues_table(infos))


@queues.command("pause")
@click.argument("queue", callback=name_callback("queue"))
@url_option
@pass_state
def pause(cli: CliState, queue: str) -> None:
    """Stop workers from taking jobs of QUEUE; it keeps accepting new jobs."""
    app = cli.store_app()
    app.admin.pause_queue(queue, by=cli_actor())
    click.echo(f"paused queue {queue}")
    _note_if_unknown(app, queue)


@queues.command("resume")
@click.argument("queue", callback=name_callback("queue"))
@url_option
@pass_state
def resume(cli: CliState, queue: str) -> None:
    """Let workers take jobs of QUEUE again."""
    cli.store_app().admin.resume_queue(queue, by=cli_actor())
    click.echo(f"resumed queue {queue}")


@queues.command("purge")
@click.argument("queue", callback=name_callback("queue"))
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@url_option
@pass_state
def purge(cli: CliState, queue: str, yes: bool) -> None:
    """Delete every scheduled and queued job of QUEUE (running jobs are left alone).

    Shows a count on stderr as it goes. On Ctrl-C the jobs deleted so far
    stay deleted (a store may delete in parts, Redis 1,000 at a time) and are
    audited; the command says how many."""
    app = cli.store_app()
    info = next((q for q in app.store.queues() if q.name == queue), None)
    scheduled, queued = (0, 0) if info is None else _pending(info)
    if not yes and info is not None:  # (no such queue: the purge says so)
        click.confirm(
            f"Delete every pending job of queue {queue!r}: {scheduled + queued} job(s) "
            f"({scheduled} scheduled, {queued} queued)?",
            abort=True,
            err=True,
        )
    count = counted(
        "purging",
        scheduled + queued,
        lambda show: app.admin.purge_queue(queue, by=cli_actor(), progress=show),
        f"purged {{done}}{{of}} pending job(s) from queue {queue} (audited); the rest are left",
    )
    click.echo(f"purged {count} pending job(s) from queue {queue}")


def _pending(info: QueueInfo) -> tuple[int, int]:
    return info.counts.get(JobState.SCHEDULED, 0), info.counts.get(JobState.QUEUED, 0)


@queues.command("mode")
@click.argument("queue", callback=name_callback("queue"))
@click.argument("mode", type=click.Choice(QUEUE_MODES))
@url_option
@pass_state
def mode(cli: CliState, queue: str, mode: str) -> None:
    """Set QUEUE to running, paused, or debug (it runs, and pauses itself at its
    first failed job)."""
    app = cli.store_app()
    app.admin.set_queue_mode(queue, mode, by=cli_actor())
    click.echo(f"queue {queue} set to {mode}")
    _note_if_unknown(app, queue)


def _note_if_unknown(app: App, queue: str) -> None:
    """Say so when ``queue`` has no jobs and no live worker serves it: a
    mode may be set ahead of a queue's first job, but a mistyped name looks
    the same."""
    info = next((q for q in app.store.queues() if q.name == queue), None)
    if info is not None and any(info.counts.values()):
        return
    now = app.store.now()
    if any(queue in w.queues and now - w.heartbeat_at <= LOST_AFTER for w in app.store.workers()):
        return
    note(
        f"(no jobs or workers on queue {queue} yet: it applies to the jobs the queue gets; "
        "check the name if you meant a queue in use)"
    )
