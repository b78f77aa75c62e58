"""``rota web`` as a real process: binding rules, auth, and no secrets in its output."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from helpers import wait_for
from rota.cli import main
from rota.stores import open_store
from web.support import OPERATOR, VIEWER, free_port

ROTA = [str(Path(sys.executable).parent / "rota")]


def _store_url(tmp_path: Path) -> str:
    """The URL of a SQLite store that exists (as a worker leaves it)."""
    url = f"sqlite:///{tmp_path / 'rota.db'}"
    open_store(url).close()
    return url


def _env_names() -> tuple[str, ...]:
    return ("ROTA_URL", "ROTA_WEB_TOKEN", "ROTA_WEB_VIEWER_TOKEN", "ROTA_WEB_SECRET")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for name in _env_names():
        env.pop(name, None)
    return env


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``rota web`` with both tokens on a free loopback port; stopped with SIGTERM."""
    port = free_port()
    env = _env() | {"ROTA_WEB_VIEWER_TOKEN": VIEWER}
    proc = subprocess.Popen(
        [
            *ROTA,
            "web",
            "--url",
            _store_url(tmp_path),
            "--port",
            str(port),
            "--token",
            OPERATOR,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"

    def up() -> bool:
        assert proc.poll() is None, proc.communicate()[0]
        try:
            return httpx.get(f"{base}/api/me", timeout=1).status_code == 401
        except httpx.TransportError:
            return False

    try:
        wait_for(up, timeout=30, interval=0.1, what="rota web to answer")
        yield base, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def test_rota_web_serves_with_roles_and_never_prints_tokens(
    served: tuple[str, subprocess.Popen[str]],
) -> None:
    base, proc = served
    assert httpx.get(f"{base}/api/stats").status_code == 401
    viewer = {"Authorization": f"Bearer {VIEWER}"}
    operator = {"Authorization": f"Bearer {OPERATOR}"}
    assert httpx.get(f"{base}/api/me", headers=viewer).json() == {"role": "viewer"}
    assert httpx.post(f"{base}/api/queues/default/pause", headers=viewer).status_code == 403
    assert httpx.post(f"{base}/api/queues/default/pause", headers=operator).status_code == 200
    queues = httpx.get(f"{base}/api/queues", headers=viewer).json()
    assert queues == [
        {"name": "default", "mode": "paused", "debug_job": None, "paused": True, "counts": {}}
    ]
    assert httpx.get(f"{base}/", follow_redirects=False).headers["location"] == "/login?next=%2F"
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=15)
    assert proc.returncode in (0, -signal.SIGTERM)  # uvicorn re-raises the signal it handled
    assert "Application shutdown complete" in output
    assert "rota web: store sqlite:///" in output
    assert "operator and viewer tokens" in output
    assert OPERATOR not in output
    assert VIEWER not in output


def test_rota_web_refuses_a_public_bind_without_a_token(tmp_path: Path) -> None:
    done = subprocess.run(
        [*ROTA, "web", "--url", _store_url(tmp_path), "--host", "0.0.0.0"],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "refusing to serve the dashboard on '0.0.0.0' without a login" in done.stderr


def test_rota_web_serves_a_public_address_with_users_and_no_token(tmp_path: Path) -> None:
    """The rule the README and docs/dashboard.md state: off loopback a login
    is needed, a user in the store or a token; a user alone will do."""
    url = _store_url(tmp_path)
    added = CliRunner().invoke(
        main,
        ["--url", url, "users", "add", "ann", "--role", "admin", "--password-stdin"],
        input="correct horse battery\n",
    )
    assert added.exit_code == 0, added.output
    proc = subprocess.Popen(
        [*ROTA, "web", "--url", url, "--host", "0.0.0.0", "--port", "0"],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()  # printed once it listens
    finally:
        proc.send_signal(signal.SIGTERM)
        output = banner + proc.communicate(timeout=15)[0]
    assert re.search(r"rota web: store sqlite:///.*http://0\.0\.0\.0:\d+/", banner), output
    assert "without a login" not in output


def test_rota_web_redacts_the_store_password(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [*ROTA, "web", "--url", "redis://:hunter2-pw@127.0.0.1:1/0", "--port", "0"],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()  # printed once it listens (port 0: any free one)
    finally:
        proc.send_signal(signal.SIGTERM)
        output = banner + proc.communicate(timeout=15)[0]
    assert re.search(
        r"rota web: store redis://:\*\*\*@127.0.0.1:1/0, .*http://127.0.0.1:\d+/", banner
    )
    assert "hunter2-pw" not in output


def test_rota_web_on_a_port_in_use_says_so_and_exits_1(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [*ROTA, "web", "--url", _store_url(tmp_path), "--port", str(port)],
            env=_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1
    assert done.stderr == (
        f"Error: the dashboard cannot listen on 127.0.0.1:{port}: Address already in use\n"
    )


def test_rota_web_without_an_app_refuses_a_store_that_does_not_exist(tmp_path: Path) -> None:
    """A mistyped URL or the wrong directory: an error naming the store, not a
    new, empty store on display (with an app, the app's store is created as
    a worker creates it)."""
    done = subprocess.run(
        [*ROTA, "web", "--port", "0"],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.startswith(f"Error: no SQLite store at {tmp_path / 'rota.db'}"), done.stderr
    assert list(tmp_path.iterdir()) == []


def test_rota_run_refusing_a_public_dashboard_names_the_workers_option(tmp_path: Path) -> None:
    done = subprocess.run(
        [*ROTA, "run", "--commands", "--url", f"sqlite:///{tmp_path / 'r.db'}", "--host", "web-3"],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "refusing to serve the dashboard on 'web-3' without a login" in done.stderr
    assert "(--worker-host names the worker's host)" in done.stderr


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (
            ["web", "--viewer-token", VIEWER],
            {},
            "--viewer-token (ROTA_WEB_VIEWER_TOKEN) needs an operator token as well "
            "(--token or ROTA_WEB_TOKEN)",
        ),
        (
            ["web"],
            {"ROTA_WEB_VIEWER_TOKEN": VIEWER},
            "--viewer-token (ROTA_WEB_VIEWER_TOKEN) needs an operator token as well "
            "(--token or ROTA_WEB_TOKEN)",
        ),
        (
            ["web", "--token", OPERATOR, "--viewer-token", OPERATOR],
            {},
            "--token (ROTA_WEB_TOKEN) and --viewer-token (ROTA_WEB_VIEWER_TOKEN) must differ",
        ),
        (
            ["web", "--token", OPERATOR, "--viewer-token", "short"],
            {},
            "--viewer-token (ROTA_WEB_VIEWER_TOKEN) must be at least 8 characters long",
        ),
        (
            ["run", "--commands"],
            {"ROTA_WEB_TOKEN": "short"},
            "--token (ROTA_WEB_TOKEN) must be at least 8 characters long",
        ),
    ],
)
def test_rota_web_names_bad_tokens_by_their_options_not_python_arguments(
    tmp_path: Path, argv: list[str], env: dict[str, str], message: str
) -> None:
    runner = CliRunner(env={name: None for name in _env_names()} | env)
    result = runner.invoke(main, ["--url", _store_url(tmp_path), *argv], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert result.stderr == f"Error: {message}\n"
    assert "viewer_token" not in result.stderr and "token=" not in result.stderr
