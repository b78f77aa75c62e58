"""Read replicas on a real MariaDB replica (two private servers, the second
replicating the first): the dashboard's reads, ``rota status`` and the
other displays read from the replica and lag with it; every change goes to
the primary, and the replica's store refuses one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

pytest.importorskip("MySQLdb")

from helpers import wait_for
from integration.redis_servers import free_port
from mariadb_server import MariaDB, mariadb_replicated
from procs import Processes
from rota import App
from rota.cli import main
from rota.errors import StoreError
from rota.models import JobState
from rota.stores import open_replica

__all__ = ["mariadb_replicated"]  # fixture

Pair = tuple[MariaDB, MariaDB]


def queued(app_reader: Callable[[], object]) -> Callable[[], int]:
    def count() -> int:
        infos = {q.name: q.counts for q in app_reader().queues()}
        return int(infos.get("default", {}).get(JobState.QUEUED, 0))

    return count


@pytest.mark.slow
def _answer(url: str) -> Any:
    try:
        reply = httpx.get(url, timeout=2)
    except httpx.TransportError:
        return None
    return reply.json() if reply.status_code == 200 else None


def test_displays_read_from_the_replica_and_changes_go_to_the_primary(
    mariadb_replicated: Pair, processes: Processes
) -> None:
    primary, replica = mariadb_replicated
    url = primary.url("cron")
    read_url = f"mysql://root@127.0.0.1:{replica.port}"  # the store's database is implied
    app = App(url, read_url=read_url)
    app.task(name="tick")(lambda n: n)
    try:
        app.tasks["tick"].send_many([(n,) for n in range(5)])
        wait_for(lambda: queued(lambda: app.reader)() == 5, 30, 0.05, "the replica to catch up")
        assert app.reader is not app.store

        # the replica lags with its replication: stopped, it shows what it had
        replica.sql("STOP SLAVE")
        app.tasks["tick"].send_many([(n,) for n in range(3)])
        assert queued(lambda: app.store)() == 8
        assert queued(lambda: app.reader)() == 5
        result = CliRunner(env={"ROTA_URL": None, "COLUMNS": None}).invoke(
            main, ["status", "--url", url, "--read-url", read_url], catch_exceptions=False
        )
        assert result.exit_code == 0, result.output
        assert "read from replica: mysql://root@127.0.0.1" in result.output
        default = next(line for line in result.output.splitlines() if line.startswith("default"))
        assert "5" in default.split() and "8" not in default.split()
        port = free_port()
        processes.rota("web", "--url", url, "--read-url", read_url, "--port", str(port))
        api = f"http://127.0.0.1:{port}/api/queues"
        shown = wait_for(lambda: _answer(api), 30, 0.1, "the dashboard to answer")
        assert {q["name"]: q["counts"]["queued"] for q in shown} == {"default": 5}
        replica.sql("START SLAVE")
        wait_for(lambda: queued(lambda: app.reader)() == 8, 30, 0.05, "the replica to catch up")
        lag = app.reader.replication_lag
        wait_for(lambda: lag() == 0.0, 30, 0.05, "the replica to say it is caught up")
        assert app.store.replication_lag() is None  # the primary
        result = CliRunner(env={"ROTA_URL": None, "COLUMNS": None}).invoke(
            main, ["status", "--url", url, "--read-url", read_url], catch_exceptions=False
        )
        assert "(caught up)" in result.output
        page = httpx.get(f"http://127.0.0.1:{port}/", timeout=10).text
        assert "pages read from mysql://root@127.0.0.1" in page and "(caught up)" in page

        # the replica's store changes nothing, even for a user the server lets write
        with pytest.raises(StoreError, match="read-only"):
            app.reader.pause_queue("default")
        assert not any(info.paused for info in app.store.queues())
    finally:
        app.close()


@pytest.mark.slow
def test_a_read_url_to_a_server_without_the_store_is_refused_naming_it(
    mariadb_replicated: Pair,
) -> None:
    primary, replica = mariadb_replicated
    with pytest.raises(StoreError, match="has no rota store in database cron"):
        open_replica(primary.url("cron"), f"mysql://root@127.0.0.1:{replica.port}")
