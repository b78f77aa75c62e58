"""A store password never shows: not in the dashboard, ``rota status``,
outage errors, nor the logs of ``rota worker`` and ``rota web``, whether the
URL carries it as ``:password@host`` or as ``?password=``."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from conformance.support import new_job
from helpers import wait_for
from integration.redis_servers import PrivateRedis, free_port, private_redis
from procs import Processes
from rota import App
from rota.cli import main
from rota.errors import StoreUnavailable
from rota.stores import open_store
from rota.web import create_app

__all__ = ["private_redis"]  # fixture

SECRET = f"pw-{uuid.uuid4().hex}"
FORMS = ["query", "userinfo"]


@pytest.fixture
def server(private_redis: type[PrivateRedis]) -> PrivateRedis:
    """A redis-server that requires the password."""
    return private_redis("--requirepass", SECRET)


def _url(address: str, form: str, **options: str) -> str:
    query = "&".join(f"{k}={v}" for k, v in {"namespace": "secrets", **options}.items())
    if form == "userinfo":
        return f"redis://:{SECRET}@{address}/0?{query}"
    return f"redis://{address}/0?password={SECRET}&{query}"


@pytest.mark.parametrize("form", FORMS)
def test_the_dashboard_shows_no_password(server: PrivateRedis, form: str) -> None:
    app = App(_url(server.address, form))

    @app.task(name="echo")
    def echo(text: str) -> str:
        return text

    job_id = echo.send("hello").id
    with TestClient(
        create_app(app), base_url="http://localhost", client=("127.0.0.1", 50000)
    ) as client:
        for path in ("/", "/jobs", f"/jobs/{job_id}", "/queues", "/workers", f"/api/jobs/{job_id}"):
            page = client.get(path)
            assert page.status_code == 200, path
            assert SECRET not in page.text, path
        assert "redis://" in client.get("/").text  # the header still names the store
    app.close()


@pytest.mark.parametrize("form", FORMS)
def test_rota_status_shows_no_password(server: PrivateRedis, form: str) -> None:
    url = _url(server.address, form)
    runner = CliRunner(env={"ROTA_URL": None, "COLUMNS": None})
    result = runner.invoke(main, ["--url", url, "status"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "store: redis://" in result.output
    assert "***" in result.output
    assert SECRET not in result.output


@pytest.mark.parametrize("form", FORMS)
def test_an_outage_error_and_its_log_show_no_password(
    caplog: pytest.LogCaptureFixture, form: str
) -> None:
    caplog.set_level(logging.DEBUG)
    store = open_store(_url(f"127.0.0.1:{free_port()}", form, retry_for="0.3"))
    try:
        with pytest.raises(StoreUnavailable) as caught:
            store.enqueue([new_job(1)])
    finally:
        store.close()
    assert "unreachable" in str(caught.value)
    assert SECRET not in str(caught.value)
    assert caplog.records
    assert all(SECRET not in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("form", FORMS)
def test_worker_and_web_logs_show_no_password(
    server: PrivateRedis,
    processes: Processes,
    app_path: Callable[[str], str],
    tmp_path: Path,
    form: str,
) -> None:
    url = _url(server.address, form)
    done = tmp_path / "done.log"
    env = {"ROTA_TEST_LOG": str(done)}
    worker = processes.rota("worker", app_path("counting"), "--url", url, env=env)
    port = free_port()
    web = processes.rota("web", "--url", url, "--port", str(port))
    store = open_store(url)
    try:
        wait_for(lambda: "rota worker: store" in processes.output(worker), timeout=30)
        store.enqueue([new_job(7, task="record")])
        wait_for(lambda: done.exists() and done.read_text(), timeout=30, what="the job to run")

        def page() -> str:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/", timeout=2).text
            except httpx.TransportError:
                return ""

        assert SECRET not in wait_for(page, timeout=30, what="rota web to answer")
        server.stop()  # an outage, logged by the worker
        wait_for(lambda: "lost the connection" in processes.output(worker), timeout=30)
        server.start()
        wait_for(lambda: "reconnected" in processes.output(worker), timeout=30)
    finally:
        store.close()
    for proc in (worker, web):
        output = processes.output(proc)
        assert "redis://" in output
        assert SECRET not in output
