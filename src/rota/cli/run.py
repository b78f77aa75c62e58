"""``rota run APP``: a worker, a scheduler and the dashboard in one process."""

from __future__ import annotations

import threading
import time

import click

from rota.app import App
from rota.cli._logging import configure, log_options
from rota.cli._support import (
    CliError,
    CliState,
    commands_option,
    name_callback,
    note,
    pass_state,
    require_app_or_commands,
    resolve_queues,
    slot_options,
    url_option,
)
from rota.cli._worker_options import log_level_option, worker_options
from rota.cli.web import address, listening_socket
from rota.errors import InvalidArgument
from rota.stores import redact_url


@click.command()
@click.argument("app_spec", metavar="[APP]", required=False)
@slot_options
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="The dashboard's address (the worker's host name is --worker-host).",
)
@click.option(
    "--worker-host",
    metavar="NAME",
    callback=name_callback("host"),
    help="The host name the worker serves jobs sent to (as rota worker --host). "
    "Default: this machine's hostname.",
)
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option(
    "--token",
    envvar="ROTA_WEB_TOKEN",
    default=None,
    help="Operator token for the dashboard; off loopback it needs this or a user in the "
    "store (rota users add).",
)
@click.option("--no-web", is_flag=True, help="Do not serve the dashboard.")
@worker_options
@commands_option
@log_level_option
@log_options
@url_option
@pass_state
def run(
    state: CliState,
    app_spec: str | None,
    queues: str,
    concurrency: int,
    mode: str,
    host: str,
    port: int,
    token: str | None,
    no_web: bool,
    worker_host: str | None,
    prefetch: int | None,
    grace: float,
    host_grace: float,
    heartbeat: float,
    max_cpu: float | None,
    max_mem: float | None,
    allow_commands: bool,
    log_level: str,
    quiet: bool,
    log_format: str,
) -> None:
    """Run a worker with an embedded scheduler and the dashboard, all in one.

    The quickest way to see an app work on one machine; on many machines run
    `rota worker`, `rota scheduler` and `rota web` separately. Without APP,
    with --commands: run only command lines, from the store of --url (or
    ROTA_URL).
    """
    from rota.worker import Worker

    configure(log_level, quiet, log_format)
    if not no_web:
        from rota.web._auth import CLI_TOKEN_NAMES, check_tokens

        check_tokens(token, None, CLI_TOKEN_NAMES)
    require_app_or_commands(app_spec, allow_commands)
    app = state.app_or_bare(app_spec)
    if allow_commands:
        app.enable_commands()
    names = resolve_queues(app, queues)
    worker = Worker(
        app,
        queues=names,
        concurrency=concurrency,
        mode=mode,
        grace=grace,
        max_cpu=max_cpu,
        max_mem=max_mem,
        scheduler=True,
        app_spec=app_spec,
        prefetch=prefetch,
        host=worker_host,
        host_grace=host_grace,
        heartbeat=heartbeat,
    )
    if not no_web:
        note(f"dashboard: {_start_dashboard(app, host, port, token)}")
    note(
        f"rota run: store {redact_url(app.url)}, queues {','.join(names)}, "
        f"concurrency {concurrency}, mode {mode}, host {worker.host}"
    )
    worker.run()


def _start_dashboard(app: App, host: str, port: int, token: str | None) -> str:
    """Serve the dashboard from a thread of this process and return its URL;
    fail if it cannot listen."""
    import uvicorn

    from rota.web import check_bind, create_app
    from rota.web._auth import is_loopback_host

    try:
        check_bind(host, token, users=not is_loopback_host(host) and bool(app.store.users()))
    except InvalidArgument as exc:  # --host is the dashboard's here, not the worker's
        raise InvalidArgument(f"{exc} (--worker-host names the worker's host)") from None
    sock = listening_socket(host, port)
    config = uvicorn.Config(create_app(app, token=token), log_level="warning")
    server = uvicorn.Server(config)  # off the main thread it leaves signals to the worker
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="rota-web", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + 10.0
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise CliError(f"the dashboard could not start on {address(sock)}")
        time.sleep(0.02)
    return address(sock)
