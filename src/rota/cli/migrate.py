"""``rota migrate``: create a store, or bring its tables to this rota's version.

The commands that only read or steer a store (``rota status``, ``rota jobs
...``, ``rota web`` without APP, ...) change nothing in it: on tables older
than this rota's they stop with an error that names this command. Workers,
schedulers, ``rota run`` and ``rota send`` migrate on their own, as before.
"""

from __future__ import annotations

import click

from rota.app import App
from rota.cli._support import CliError, CliState, note, pass_state, url_option
from rota.stores import MissingStore, OutdatedStore, check_url, open_store, redact_url

__all__ = ["migrate"]

#: The URL schemes of the stores without a schema (Redis).
_SCHEMALESS = ("redis", "rediss", "unix")


@click.command()
@click.option(
    "--check",
    is_flag=True,
    help="Only say whether the store needs creating or migrating (exit status 1 if it does).",
)
@url_option
@pass_state
def migrate(cli: CliState, check: bool) -> None:
    """Create the store, or migrate its tables to this rota's version.

    Run it after upgrading rota, as a user who may create and alter the
    store's tables (workers and `rota send` migrate too, given that right).
    It says what it did: created the store at a version, migrated it from
    one version to another, or found it at this rota's version already. A
    migration that may take long on a big table is named, with what waits
    for it, before it starts. A Redis store has nothing to migrate."""
    url = App(cli.url).url
    shown = redact_url(url)
    if check_url(url) in _SCHEMALESS:
        store = open_store(url, wait=False)
        try:
            store.now()  # a server that does not answer fails here
        finally:
            store.close()
        click.echo(
            f"{shown}: nothing to migrate: a Redis store has no schema (rota reads what earlier "
            "versions wrote as it is, and loads its functions on first use)"
        )
        return
    try:
        open_store(url, must_exist=True, wait=False).close()
    except MissingStore as missing:
        if check:
            raise CliError(f"{missing}; `rota migrate` creates it") from None
        open_store(url, wait=False).close()
        click.echo(f"{shown}: created the store at version {missing.newest}")
        return
    except OutdatedStore as old:
        if check:
            raise CliError(_outdated(old, shown)) from None
        _migrate(url, shown, old)
        return
    click.echo(f"{shown}: already at version {_newest(url)}: nothing to migrate")


def _outdated(old: OutdatedStore, shown: str) -> str:
    """What ``--check`` says of tables at an older version."""
    slow = "".join(f"; {note}" for note in old.slow)
    return f"{shown}: at version {old.found}, this rota needs {old.newest}{slow}"


def _migrate(url: str, shown: str, old: OutdatedStore) -> None:
    """Migrate the tables ``old`` describes, saying first what may take long."""
    for slow in old.slow:
        note(f"note: {slow}")
    note(f"migrating {old.tables} from version {old.found} to {old.newest} ...")
    open_store(url, wait=False).close()
    click.echo(f"{shown}: migrated from version {old.found} to {old.newest}")


def _newest(url: str) -> int:
    """The schema version this rota ships for the SQL store of ``url``."""
    from rota.stores.sql.queries import newest_migration

    scheme = check_url(url)
    package = {"sqlite": "sqlite", "mysql": "mysql"}.get(scheme, "postgres")
    return newest_migration(f"rota.stores.{package}")
