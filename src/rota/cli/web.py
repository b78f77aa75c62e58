"""``rota web [APP]``: serve the dashboard and the REST API."""

from __future__ import annotations

import os
import socket

import click

from rota.cli._logging import configure
from rota.cli._support import (
    CliError,
    CliState,
    note,
    pass_state,
    read_url_option,
    url_option,
)
from rota.stores import redact_url


@click.command()
@click.argument("app_spec", metavar="[APP]", required=False)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option(
    "--token",
    envvar="ROTA_WEB_TOKEN",
    default=None,
    help="Operator token (read and act). Off loopback a login is needed: this token, or "
    "a user in the store (rota users add). Env: ROTA_WEB_TOKEN.",
)
@click.option(
    "--viewer-token",
    envvar="ROTA_WEB_VIEWER_TOKEN",
    default=None,
    help="Read-only token. Env: ROTA_WEB_VIEWER_TOKEN.",
)
@click.option(
    "--secret",
    envvar="ROTA_WEB_SECRET",
    default=None,
    help="Key that signs session cookies; set it so logins survive restarts and "
    "are shared by replicas. Env: ROTA_WEB_SECRET.",
)
@click.option(
    "--log-level",
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    default="info",
    show_default=True,
)
@url_option
@read_url_option
@pass_state
def web(
    state: CliState,
    app_spec: str | None,
    host: str,
    port: int,
    token: str | None,
    viewer_token: str | None,
    secret: str | None,
    log_level: str,
) -> None:
    """Serve the dashboard and the REST API (/api/, /metrics).

    APP is optional: the dashboard only needs the store, so `rota web --url
    URL` works too (on a store that exists: a worker creates it); with APP
    its task names are offered in the filters.
    Binds 127.0.0.1 unless --host says otherwise, and refuses any other
    address without a login: --token, or a user in the store (rota users
    add).
    """
    import uvicorn

    from rota.web import check_bind, create_app
    from rota.web._auth import CLI_TOKEN_NAMES, check_tokens, is_loopback_host

    check_tokens(token, viewer_token, CLI_TOKEN_NAMES)  # named as given here, not as kwargs
    configure(log_level, quiet=False, log_format="text")  # rota's own lines, as a worker's
    # Without APP the dashboard opens only a store that exists: a mistyped
    # URL or the wrong directory would otherwise show a new, empty store.
    app = state.load_app(app_spec) if app_spec else state.store_app(wait=True)
    check_bind(host, token, users=not is_loopback_host(host) and bool(app.store.users()))
    asgi = create_app(app, token=token, viewer_token=viewer_token, secret=secret)
    sock = listening_socket(host, port)
    roles = "operator and viewer tokens" if viewer_token else ("a token" if token else "no token")
    replica = f", reads from {redact_url(app.read_url)}" if app.read_url is not None else ""
    note(f"rota web: store {redact_url(app.url)}{replica}, {roles}, {address(sock)}")
    config = uvicorn.Config(asgi, log_level=log_level, server_header=False)
    uvicorn.Server(config).run(sockets=[sock])


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket that listens on ``host``:``port`` for the dashboard (port 0:
    one the system picks); a :class:`CliError` that says why not (the port
    taken, an unknown host) before anything is announced."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        why = os.strerror(exc.errno) if exc.errno else str(exc)
        raise CliError(f"the dashboard cannot listen on {_display(host)}:{port}: {why}") from None


def address(sock: socket.socket) -> str:
    """The dashboard's URL on the listening ``sock``."""
    host, port = sock.getsockname()[:2]
    return f"http://{_display(host)}:{port}/"


def _display(host: str) -> str:
    return f"[{host}]" if ":" in host else host
