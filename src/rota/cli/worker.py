"""``rota worker APP``: run jobs from the store until stopped."""

from __future__ import annotations

import os
import sys

import click

from rota.cli._logging import configure, log_options
from rota.cli._support import (
    CliState,
    commands_option,
    duration_callback,
    name_callback,
    pass_state,
    require_app_or_commands,
    resolve_queues,
    slot_options,
    url_option,
)
from rota.diagnose import HEARTBEAT_MAX, LOST_AFTER
from rota.stores import redact_url
from rota.worker.ahead import HOLD_FOR, HOLD_MAX

__all__ = ["worker"]


#: ``--processes`` takes at most this many worker processes per CPU: each is
#: a whole worker (an interpreter, the app, store connections), and more
#: jobs at once are what ``--concurrency`` is for.
MAX_PROCESSES_PER_CPU = 8


def processes_callback(ctx: click.Context, param: click.Parameter, value: str) -> int:
    """``--processes``: a whole number from 1 to :data:`MAX_PROCESSES_PER_CPU`
    times the CPU count, or ``auto`` (the CPU count)."""
    cpus = os.cpu_count() or 1
    if value.strip().lower() == "auto":
        return cpus
    try:
        count = int(value)
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is not a number of processes (a whole number from 1, or 'auto')"
        ) from None
    if count < 1:
        raise click.BadParameter(f"{count} is too few: at least 1 process (or 'auto')")
    most = MAX_PROCESSES_PER_CPU * cpus
    if count > most:
        raise click.BadParameter(
            f"{count} is too many: at most {most} ({MAX_PROCESSES_PER_CPU} per CPU, "
            f"{cpus} here); to run more jobs at once, raise --concurrency"
        )
    return count


LOG_LEVELS = ("debug", "info", "warning", "error")


@click.command()
@click.argument("app_spec", metavar="[APP]", required=False)
@slot_options
@click.option(
    "--prefetch",
    type=click.IntRange(min=0),
    default=None,
    help="Jobs this worker may hold beyond its slots, waiting for one, so a claim "
    "brings several (released at shutdown). Default: as many as its slots free within "
    f"{HOLD_FOR * 1000:g} ms at its jobs' average run time, {HOLD_MAX} at most (none while "
    "jobs are long).",
)
@click.option(
    "--processes",
    metavar="N|auto",
    default="1",
    show_default=True,
    callback=processes_callback,
    help="Worker processes to run, each with its own --concurrency slots, supervised "
    f"(a crashed one is restarted); 'auto' for one per CPU; at most {MAX_PROCESSES_PER_CPU} "
    "per CPU (to run more jobs at once, raise --concurrency).",
)
@click.option(
    "--grace",
    metavar="SECONDS",
    default="30",
    show_default=True,
    callback=duration_callback,
    help="On SIGTERM, how long running jobs may take to finish before they are released.",
)
@click.option(
    "--host",
    "host",
    metavar="NAME",
    default=None,
    callback=name_callback("host"),
    help="The host name this worker serves jobs sent to (task.options(host=NAME), "
    "rota send --host NAME). Default: this machine's hostname.",
)
@click.option(
    "--host-grace",
    metavar="SECONDS",
    default="300",
    show_default=True,
    callback=duration_callback,
    help="Run jobs sent to another host once no worker of that host has served "
    "their queue for this long.",
)
@click.option(
    "--heartbeat",
    metavar="SECONDS",
    type=click.FloatRange(0.1, HEARTBEAT_MAX),
    default=5.0,
    show_default=True,
    help="How often the worker records its state, counts and load in the store "
    f"(the dashboard's workers; at most {HEARTBEAT_MAX:g}: a worker silent for "
    f"{LOST_AFTER:g} s shows as lost).",
)
@click.option(
    "--max-cpu",
    metavar="PCT",
    type=click.FloatRange(0, 100, min_open=True),
    help="Stop claiming while the host's CPU use is above this percentage.",
)
@click.option(
    "--max-mem",
    metavar="PCT",
    type=click.FloatRange(0, 100, min_open=True),
    help="Stop claiming while the host's memory use is above this percentage.",
)
@click.option("--scheduler", is_flag=True, help="Also fire due schedules from this worker.")
@commands_option
@click.option(
    "--log-level",
    type=click.Choice(LOG_LEVELS, case_sensitive=False),
    default="info",
    show_default=True,
    help="Log messages from this level up, on stderr.",
)
@log_options
@url_option
@pass_state
def worker(
    cli: CliState,
    app_spec: str | None,
    queues: str,
    concurrency: int,
    mode: str,
    prefetch: int | None,
    processes: int,
    grace: float,
    host: str | None,
    host_grace: float,
    heartbeat: float,
    max_cpu: float | None,
    max_mem: float | None,
    scheduler: bool,
    allow_commands: bool,
    log_level: str,
    quiet: bool,
    log_format: str,
) -> None:
    """Run jobs of APP's tasks until SIGTERM or Ctrl-C.

    Without APP, with --commands: run only command lines, from the store of
    --url (or ROTA_URL).

    On the first signal the worker stops claiming, lets running jobs finish
    within --grace, and gives the rest back to the queue; a second signal
    stops it at once.

    With --processes N above 1 a supervisor runs N such workers as child
    processes, restarts any that exits, and forwards the signals to them.
    """
    from rota.worker import Worker
    from rota.worker.pool import POOL_CHILD

    # a pool's first child logs the notices about the store's setup for all
    configure(log_level, quiet, log_format, notices=os.environ.get(POOL_CHILD, "0") == "0")
    require_app_or_commands(app_spec, allow_commands)
    if processes > 1:
        from rota.worker.pool import pool_main

        click.echo(f"rota worker: supervising {processes} worker processes")
        pool_main(sys.argv[1:], processes, grace)
    app = cli.app_or_bare(app_spec, wait_for_store=True)
    if allow_commands:
        app.enable_commands()
    names = resolve_queues(app, queues)
    engine = Worker(
        app,
        queues=names,
        concurrency=concurrency,
        mode=mode,
        grace=grace,
        max_cpu=max_cpu,
        max_mem=max_mem,
        scheduler=scheduler,
        app_spec=app_spec,
        prefetch=prefetch,
        host=host,
        host_grace=host_grace,
        heartbeat=heartbeat,
        second_signal_exits=POOL_CHILD not in os.environ,  # (the supervisor escalates)
    )
    extra = ", with scheduler" if scheduler else ""
    click.echo(
        f"rota worker: store {redact_url(app.url)}, queues {','.join(names)}, "
        f"concurrency {concurrency}, mode {mode}, host {engine.host}{extra}"
    )
    engine.run()
