"""The MySQL / MariaDB store under the rights a production server grants: a
user that may only read and write rows uses a database its owner migrated,
and where rota must create or migrate and may not, the error says what it
tried, what right is missing and how to get there."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

pytest.importorskip("MySQLdb")

from backends import MYSQL_URL, mysql_execute
from conformance.support import sends_and_claims
from rota.errors import StoreError, StoreUnavailable
from rota.stores import open_store

ROW_RIGHTS = "SELECT, INSERT, UPDATE, DELETE"


@pytest.fixture
def user(my_url: str) -> Iterator[str]:
    """A user of the server with no right at all."""
    name = f"rota_rights_{uuid.uuid4().hex[:10]}"
    mysql_execute(my_url, f"CREATE USER '{name}'@'%'")
    yield name
    mysql_execute(my_url, f"DROP USER '{name}'@'%'")


def as_user(url: str, user: str, database: str | None = None) -> str:
    """``url`` with ``user`` in place of its user (and ``database`` of its)."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return f"mysql://{user}@{host}/{database or parts.path.strip('/')}"


def test_a_user_with_only_row_rights_uses_a_database_its_owner_migrated(
    my_url: str, user: str
) -> None:
    open_store(my_url).close()  # the owner migrates it
    database = urlsplit(my_url).path.strip("/")
    mysql_execute(my_url, f"GRANT {ROW_RIGHTS} ON {database}.* TO '{user}'@'%'")
    sends_and_claims(as_user(my_url, user))


def test_a_user_with_only_row_rights_on_an_older_database_is_told_to_let_the_owner_migrate(
    my_url: str, user: str
) -> None:
    open_store(my_url).close()
    mysql_execute(my_url, "DELETE FROM schema_versions WHERE version > 1")
    database = urlsplit(my_url).path.strip("/")
    mysql_execute(my_url, f"GRANT {ROW_RIGHTS} ON {database}.* TO '{user}'@'%'")
    with pytest.raises(
        StoreError,
        match=f"rota tried to migrate its tables from version 1 to .* \\(database {database}\\), "
        f"and user {user} lacks the right to create, alter and index tables: open the store "
        "once as a user that may",
    ):
        open_store(as_user(my_url, user))


def test_a_user_without_rights_on_the_tables_is_told_which_to_grant(my_url: str, user: str) -> None:
    open_store(my_url).close()
    database = urlsplit(my_url).path.strip("/")
    mysql_execute(my_url, f"GRANT INSERT ON {database}.* TO '{user}'@'%'")
    with pytest.raises(
        StoreError,
        match=f"user {user} may not use rota's tables in database {database}: GRANT "
        f"{ROW_RIGHTS} ON {database}.\\* TO the user",
    ):
        open_store(as_user(my_url, user))


def test_a_database_the_user_may_not_create_is_refused_with_what_to_do(user: str) -> None:
    database = f"rota_rights_{uuid.uuid4().hex[:10]}"
    with pytest.raises(
        StoreError,
        match=f"user {user} may not use database {database}, or it does not exist and the "
        f"user may not create it: let an administrator create it \\(CREATE DATABASE {database}\\)",
    ):
        open_store(as_user(f"{MYSQL_URL}/x", user, database))


def test_a_wrong_password_is_a_refused_connection_in_the_servers_words(
    my_url: str, user: str
) -> None:
    wrong = as_user(my_url, f"{user}:not-its-password")
    with pytest.raises(StoreError, match="refused the connection: Access denied for user") as no:
        open_store(wrong)
    assert not isinstance(no.value, StoreUnavailable)
    assert "1045" not in str(no.value)  # the server's words, not the driver's tuple
