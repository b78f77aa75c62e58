"""Where an app's read URL comes from and how the replica's URL is made from it
(no server needed: nothing here connects)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest
from click.testing import CliRunner

from rota import App
from rota.cli import main
from rota.errors import InvalidArgument
from rota.stores import open_store, read_url_of, redact_url, replica_url

PRIMARY = "postgresql://app:s3cr3t@primary:5432/jobs?schema=crawl"
REPLICA = "postgresql://app:s3cr3t@replica:5432/jobs"


def with_read_url(url: str, read_url: str) -> str:
    return f"{url}&read_url={quote(read_url, safe='')}"


@pytest.fixture(autouse=True)
def _no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROTA_URL", raising=False)
    monkeypatch.delenv("ROTA_READ_URL", raising=False)


def test_the_argument_beats_the_url_option_which_beats_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ROTA_READ_URL", "postgresql://env-replica/jobs")
    option = "postgresql://option-replica/jobs"
    assert App(PRIMARY).read_url == "postgresql://env-replica/jobs"
    assert App(with_read_url(PRIMARY, option)).read_url == option
    assert App(with_read_url(PRIMARY, option), read_url=REPLICA).read_url == REPLICA


def test_no_read_url_means_none() -> None:
    assert App(PRIMARY).read_url is None
    assert read_url_of(PRIMARY) is None
    assert read_url_of(f"{PRIMARY}&read_url=") is None


def test_the_replica_gets_the_primary_schema_unless_it_names_it() -> None:
    assert replica_url(PRIMARY, REPLICA) == f"{REPLICA}?schema=crawl"
    assert replica_url("postgresql://primary/jobs", REPLICA) == f"{REPLICA}?schema=rota"
    named = f"{REPLICA}?schema=crawl&sslmode=require"
    assert replica_url(PRIMARY, named) == named
    kept = replica_url(PRIMARY, f"{REPLICA}?sslmode=require")
    assert kept == f"{REPLICA}?sslmode=require&schema=crawl"


def test_a_replica_in_another_schema_is_refused() -> None:
    with pytest.raises(
        InvalidArgument, match="names schema 'other' but the store is in schema 'crawl'"
    ):
        replica_url(PRIMARY, f"{REPLICA}?schema=other")


@pytest.mark.parametrize("read_url", ["sqlite:///replica.db", "redis://replica/0", "replica"])
def test_a_read_url_that_is_not_postgres_is_refused(read_url: str) -> None:
    with pytest.raises(InvalidArgument):
        replica_url(PRIMARY, read_url)
    with pytest.raises(InvalidArgument):
        App(PRIMARY, read_url=read_url)


@pytest.mark.parametrize("url", ["sqlite:///rota.db", "redis://localhost:6379/0"])
def test_a_read_url_on_another_store_is_refused(url: str) -> None:
    with pytest.raises(InvalidArgument, match="works only with a PostgreSQL or MySQL store"):
        App(url, read_url=REPLICA)
    with pytest.raises(InvalidArgument, match="works only with a PostgreSQL or MySQL store"):
        open_store(f"{url}?read_url={quote(REPLICA, safe='')}")


def test_the_replica_password_in_the_url_option_is_redacted() -> None:
    shown = redact_url(with_read_url(PRIMARY, f"{REPLICA}?sslpassword=s3cr3t"))
    assert "s3cr3t" not in shown
    assert "replica:5432" in shown


def test_the_libpq_url_has_no_read_url() -> None:
    pytest.importorskip("psycopg")
    from rota.stores.postgres.store import split_url

    conninfo, options = split_url(with_read_url(PRIMARY, REPLICA))
    assert "read_url" not in conninfo
    assert options == {"schema": "crawl", "read_url": REPLICA}


@pytest.mark.parametrize(
    ("url", "libpq", "fields"),
    [
        ("postgresql:///rota", "postgresql:///rota", {"dbname": "rota"}),
        (
            "postgres://?host=127.0.0.1&dbname=rota&schema=crawl",
            "postgresql://?host=127.0.0.1&dbname=rota",
            {"host": "127.0.0.1", "dbname": "rota"},
        ),
        ("postgresql://u@h:5433/d?schema=s", "postgresql://u@h:5433/d", {"port": "5433"}),
    ],
)
def test_the_libpq_url_keeps_a_url_without_a_host_as_written(
    url: str, libpq: str, fields: dict[str, str]
) -> None:
    psycopg = pytest.importorskip("psycopg")
    from rota.stores.postgres.store import split_url

    conninfo, _ = split_url(url)
    assert conninfo == libpq
    assert fields.items() <= psycopg.conninfo.conninfo_to_dict(conninfo).items()


def test_rota_refuses_read_url_on_a_sqlite_store(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'rota.db'}"
    result = CliRunner().invoke(main, ["jobs", "list", "--url", url, "--read-url", REPLICA])
    assert result.exit_code == 2, result.output
    assert "works only with a PostgreSQL or MySQL store" in result.output
    assert "s3cr3t" not in result.output


MYSQL = "mysql://rota@db-main:3306/cron"


def test_a_mysql_read_url_takes_the_store_database_when_it_names_none() -> None:
    assert replica_url(MYSQL, "mysql://reader@db-replica:3306") == (
        "mysql://reader@db-replica:3306/cron"
    )
    assert replica_url(MYSQL, "mysql://reader@db-replica/cron?pool_size=2") == (
        "mysql://reader@db-replica/cron?pool_size=2"
    )


def test_a_mysql_read_url_naming_another_database_or_kind_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="names database 'other' but the store is in"):
        replica_url(MYSQL, "mysql://reader@db-replica/other")
    with pytest.raises(InvalidArgument, match="is not a MySQL URL"):
        replica_url(MYSQL, REPLICA)
    with pytest.raises(InvalidArgument, match="is not a PostgreSQL URL"):
        replica_url(PRIMARY, "mysql://reader@db-replica/cron")
