"""``rota worker APP``: run jobs from the store until stopped."""

from __future__ import annotations

import os
import sys

import click

from rota.cli._logging import configure, log_options
from rota.cli._support import (
    CliState,
    commands_option,
    name_callback,
    pass_state,
    require_app_or_commands,
    resolve_queues,
    slot_options,
    url_option,
)
from rota.cli._worker_options import log_level_option, worker_options
from rota.stores import redact_url

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


@click.command()
@click.argument("app_spec", metavar="[APP]", required=False)
@slot_options
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
    "--host",
    "host",
    metavar="NAME",
    default=None,
    callback=name_callback("host"),
    help="The host name this worker serves jobs sent to (task.options(host=NAME), "
    "rota send --host NAME). Default: this machine's hostname.",
)
@worker_options
@click.option("--scheduler", is_flag=True, help="Also fire due schedules from this worker.")
@commands_option
@log_level_option
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
