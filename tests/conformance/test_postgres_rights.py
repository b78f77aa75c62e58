"""The PostgreSQL store under the rights a production database grants: a
role that may not create schemas uses one made for it, a role that may only
read and write rows uses a schema its owner migrated, a read-only server
serves a migrated schema, and where rota must create or migrate and may not,
the error says what it tried, what right is missing and how to get there."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

psycopg = pytest.importorskip("psycopg")

from backends import POSTGRES_URL, postgres_reachable  # noqa: E402
from conformance.support import sends_and_claims  # noqa: E402
from rota import App  # noqa: E402
from rota.errors import StoreError  # noqa: E402
from rota.stores import open_store  # noqa: E402

pytestmark = pytest.mark.skipif(not postgres_reachable(), reason="PostgreSQL is not reachable")

SERVER = POSTGRES_URL.rsplit("/", 1)[0]


@dataclass
class Database:
    """A database of this module's, where PUBLIC may create nothing, and a
    schema name and roles of one test's."""

    name: str
    schema: str
    roles: list[str]

    def admin(self, sql: str) -> None:
        """Run ``sql`` in the database as the server's superuser."""
        with psycopg.connect(f"{SERVER}/{self.name}", autocommit=True) as conn:
            conn.execute(sql)

    def role(self, label: str) -> str:
        """A new login role without any right beyond PUBLIC's."""
        name = f"{self.schema}_{label}"
        self.admin(f"CREATE ROLE {name} LOGIN")
        self.roles.append(name)
        return name

    def url(self, user: str, schema: str | None = None, options: str = "") -> str:
        host = SERVER.split("@", 1)[1]
        return f"postgresql://{user}@{host}/{self.name}?schema={schema or self.schema}{options}"

    def drop(self) -> None:
        """Drop the test's schemas and roles."""
        with psycopg.connect(f"{SERVER}/{self.name}", autocommit=True) as conn:
            for (schema,) in conn.execute(
                "SELECT nspname FROM pg_namespace WHERE nspname LIKE %s", (f"{self.schema}%",)
            ).fetchall():
                conn.execute(f"DROP SCHEMA {schema} CASCADE")
            for role in self.roles:
                conn.execute(f"DROP OWNED BY {role}")
                conn.execute(f"DROP ROLE {role}")


@pytest.fixture(scope="module")
def database_name() -> Iterator[str]:
    name = f"rota_rights_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    with psycopg.connect(f"{SERVER}/{name}", autocommit=True) as conn:
        conn.execute(f"REVOKE CREATE ON DATABASE {name} FROM PUBLIC")
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
    yield name
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture
def database(database_name: str) -> Iterator[Database]:
    db = Database(database_name, f"rota_rights_{uuid.uuid4().hex[:10]}", [])
    yield db
    db.drop()


def test_a_role_without_create_on_the_database_uses_a_schema_made_for_it(
    database: Database,
) -> None:
    role = database.role("app")
    database.admin(f"CREATE SCHEMA {database.schema} AUTHORIZATION {role}")
    sends_and_claims(database.url(role))


def test_a_schema_the_role_may_not_create_is_refused_with_what_to_do(database: Database) -> None:
    role = database.role("app")
    with pytest.raises(StoreError) as caught:
        open_store(database.url(role))
    message = str(caught.value)
    assert f"rota tried to create schema {database.schema} in database {database.name}" in message
    assert f"role {role} lacks the CREATE right on database {database.name}" in message
    assert f"CREATE SCHEMA {database.schema} AUTHORIZATION {role}" in message


def test_a_role_with_only_row_rights_uses_a_schema_its_owner_migrated(database: Database) -> None:
    open_store(database.url("postgres")).close()  # the owner migrates it
    role = database.role("rows")
    database.admin(f"GRANT USAGE ON SCHEMA {database.schema} TO {role}")
    database.admin(
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {database.schema} TO {role}"
    )
    sends_and_claims(database.url(role))


def test_a_role_with_only_row_rights_on_an_older_schema_is_told_to_let_the_owner_migrate(
    database: Database,
) -> None:
    open_store(database.url("postgres")).close()
    database.admin(f"DELETE FROM {database.schema}.schema_versions WHERE version > 1")
    role = database.role("rows")
    database.admin(f"GRANT USAGE ON SCHEMA {database.schema} TO {role}")
    database.admin(
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {database.schema} TO {role}"
    )
    with pytest.raises(
        StoreError,
        match=f"rota tried to migrate the tables of schema {database.schema} "
        "from version 1 to .*open the store once as the owner of its tables",
    ):
        open_store(database.url(role))


def test_a_read_command_as_a_role_with_only_row_rights_on_an_older_schema_names_rota_migrate(
    database: Database,
) -> None:
    """A read command neither migrates nor tries to: it says the tables are
    behind and how to migrate them, rather than that the role may not."""
    from click.testing import CliRunner

    from rota.cli import main

    open_store(database.url("postgres")).close()
    database.admin(f"DELETE FROM {database.schema}.schema_versions WHERE version > 1")
    role = database.role("rows")
    database.admin(f"GRANT USAGE ON SCHEMA {database.schema} TO {role}")
    database.admin(
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {database.schema} TO {role}"
    )
    result = CliRunner(env={"ROTA_URL": None}).invoke(main, ["status", "--url", database.url(role)])
    assert result.exit_code == 1, result.output
    assert f"the tables of schema {database.schema} of the PostgreSQL store" in result.output
    assert "are at version 1, this rota needs" in result.output
    assert "run `rota migrate --url" in result.output and "lacks" not in result.output


def test_a_role_without_rights_on_the_schema_is_told_which_to_grant(database: Database) -> None:
    open_store(database.url("postgres")).close()
    role = database.role("none")
    with pytest.raises(
        StoreError,
        match=f"role {role} may not use rota's tables in schema "
        f"{database.schema}: GRANT USAGE ON SCHEMA {database.schema} TO {role}",
    ):
        open_store(database.url(role))


def test_a_read_only_server_serves_a_migrated_schema(database: Database) -> None:
    open_store(database.url("postgres")).close()
    read_only = "&options=-c%20default_transaction_read_only%3Don"
    store = open_store(database.url("postgres", options=read_only))
    try:
        assert store.queues() == []
    finally:
        store.close()
    with pytest.raises(
        StoreError,
        match=f"rota tried to create schema {database.schema}_other .* and the "
        "server is read-only .*open the store once on the primary",
    ):
        open_store(database.url("postgres", f"{database.schema}_other", read_only))


def test_a_send_in_a_transaction_of_a_role_without_rights_says_which_to_grant(
    database: Database,
) -> None:
    app = App(database.url("postgres"))  # the owner's store: migrated
    app.task(name="ship")(lambda order: order)
    role = database.role("biz")
    database.admin(f"CREATE TABLE public.orders_{role} (id INT)")
    database.admin(f"GRANT INSERT, SELECT ON public.orders_{role} TO {role}")
    conn = psycopg.connect(f"postgresql://{role}@{SERVER.split('@', 1)[1]}/{database.name}")
    try:
        conn.execute(f"INSERT INTO public.orders_{role} VALUES (1)")
        grant = f"GRANT USAGE ON SCHEMA {database.schema} TO {role}, and SELECT, INSERT"
        with pytest.raises(StoreError, match=f"role {role} may not use rota's tables.*{grant}"):
            app.tasks["ship"].send(1, connection=conn)
        # the caller's transaction goes on: its row is there, and it commits
        assert conn.execute(f"SELECT count(*) FROM public.orders_{role}").fetchone() == (1,)
        conn.commit()

        database.admin(f"GRANT USAGE ON SCHEMA {database.schema} TO {role}")  # no table rights
        conn.execute(f"INSERT INTO public.orders_{role} VALUES (2)")
        with pytest.raises(StoreError, match=f"role {role} may not use rota's tables.*{grant}"):
            app.tasks["ship"].send(2, connection=conn)
        conn.rollback()
        assert [q.counts for q in app.store.queues()] in ([], [{}])
    finally:
        conn.close()
        database.admin(f"DROP TABLE public.orders_{role}")
        app.close()
