"""``rota users ...``: dashboard and API accounts, their roles and API tokens."""

from __future__ import annotations

import getpass
import sys

import click
from rich.table import Table

from rota.cli._actor import cli_actor
from rota.cli._support import (
    CliState,
    CliUsageError,
    console,
    fmt_time,
    note,
    pass_state,
    url_option,
)
from rota.models import USER_ROLES

__all__ = ["users"]

_ROLE = click.Choice(USER_ROLES)


def _password(from_stdin: bool) -> str:
    """A new password: the first line of stdin, or asked twice at the terminal."""
    if from_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    if not sys.stdin.isatty():
        raise CliUsageError("no terminal to ask for the password: pass --password-stdin")
    first = getpass.getpass("Password: ")
    if getpass.getpass("Password again: ") != first:
        raise CliUsageError("the two passwords differ; nothing changed")
    return first


_stdin_option = click.option(
    "--password-stdin",
    is_flag=True,
    help="Read the password from the first line of standard input instead of asking.",
)


@click.group()
def users() -> None:
    """Manage who may log in to the dashboard and use the API (roles: viewer, operator, admin)."""


@users.command("add")
@click.argument("name")
@click.option(
    "--role",
    type=_ROLE,
    required=True,
    help="viewer reads; operator acts; admin also manages users.",
)
@_stdin_option
@url_option
@pass_state
def add(cli: CliState, name: str, role: str, password_stdin: bool) -> None:
    """Create user NAME with a password (asked twice, or --password-stdin)."""
    password = _password(password_stdin)
    # the first user may come before any worker: a missing SQLite file is created
    cli.store_app(must_exist=False).admin.add_user(name, role, password, by=cli_actor())
    click.echo(f"added {name} ({role})")


@users.command("list")
@url_option
@pass_state
def list_users(cli: CliState) -> None:
    """Every user with its role and the labels of its API tokens and of its
    dashboard sessions (dashboard-session-...)."""
    found = cli.store_app().admin.users(by=cli_actor())
    if not found:
        note("no users yet: rota users add NAME --role admin")
        return
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("name", "role", "created", "tokens"):
        table.add_column(column)
    for user in found:
        table.add_row(user.name, user.role, fmt_time(user.created_at), ", ".join(user.tokens))
    console().print(table)


@users.command("remove")
@click.argument("name")
@url_option
@pass_state
def remove(cli: CliState, name: str) -> None:
    """Remove user NAME; its API tokens stop working at once."""
    cli.store_app().admin.remove_user(name, by=cli_actor())
    click.echo(f"removed {name}")


@users.command("role")
@click.argument("name")
@click.argument("role", type=_ROLE)
@url_option
@pass_state
def role(cli: CliState, name: str, role: str) -> None:
    """Give user NAME the role ROLE."""
    cli.store_app().admin.set_role(name, role, by=cli_actor())
    click.echo(f"{name} is now {role}")


@users.command("passwd")
@click.argument("name")
@_stdin_option
@url_option
@pass_state
def passwd(cli: CliState, name: str, password_stdin: bool) -> None:
    """Set a new password for user NAME (their dashboard sessions end)."""
    cli.store_app().admin.set_password(name, _password(password_stdin), by=cli_actor())
    click.echo(f"password of {name} changed")


@users.command("token")
@click.argument("name")
@click.argument("label")
@url_option
@pass_state
def token(cli: CliState, name: str, label: str) -> None:
    """Make API token LABEL for user NAME and print its secret, this once only
    (send it as 'Authorization: Bearer SECRET'). A token of the same label is replaced."""
    secret = cli.store_app().admin.create_token(name, label, by=cli_actor())
    click.echo(secret)
    note(f"token {label} of {name}: store it now, it is not shown again")


@users.command("revoke")
@click.argument("name")
@click.argument("label")
@url_option
@pass_state
def revoke(cli: CliState, name: str, label: str) -> None:
    """Revoke API token LABEL of user NAME, or end one of its dashboard
    sessions (a LABEL dashboard-session-...)."""
    cli.store_app().admin.revoke_token(name, label, by=cli_actor())
    click.echo(f"revoked token {label} of {name}")
