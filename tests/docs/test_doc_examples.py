"""Every Python and shell example in README.md and docs/*.md runs as written.

Each example (a block, plus the blocks marked ``continue`` after it) runs in a
fresh directory against its own store, named by ``ROTA_URL``; see
``doc_blocks`` for the markers. A failing example names its file and line.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from doc_blocks import (
    ROOT,
    Block,
    DocTestMarkupError,
    Example,
    blocks_of,
    doc_files,
    examples_of,
)

from backends import drop_store, store_url
from helpers import wait_for

STEP_TIMEOUT = 60.0
READY_TIMEOUT = 30.0
BIN = Path(sys.executable).parent

ALL_BLOCKS = [block for path in doc_files() for block in blocks_of(path)]
EXAMPLES = examples_of(ALL_BLOCKS)


class Background:
    """Commands an example started in the background; all stopped at the end."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, block: Block, env: dict[str, str]) -> None:
        log_path = self.tmp_path / f"background-{len(self.procs)}.log"
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                ["bash", "-euo", "pipefail", "-c", block.commands()],
                cwd=self.tmp_path,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.procs.append(proc)
        until = block.markers["background"].removeprefix("until").strip()

        def ready() -> bool:
            output = log_path.read_text(errors="replace")
            if proc.poll() is not None:
                pytest.fail(f"{block.where}: exited with {proc.returncode}:\n{output}")
            return until in output

        wait_for(ready, timeout=READY_TIMEOUT, what=f"{block.where} to print {until!r}")

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(10)


@pytest.fixture
def background(tmp_path: Path) -> Iterator[Background]:
    started = Background(tmp_path)
    yield started
    started.stop_all()


def example_env(example: Example, url: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("ROTA_")}
    env["ROTA_URL"] = url
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["COLUMNS"] = "200"
    for block in example.blocks:
        for name in block.markers.get("env", "").split():
            env[name] = secrets.token_urlsafe(24)
    return env


def run_step(block: Block, cwd: Path, env: dict[str, str]) -> str:
    if block.lang == "python":
        argv, stdin = [sys.executable, "-"], block.code
    else:
        argv, stdin = ["bash", "-euo", "pipefail", "-s"], block.commands()
    try:
        done = subprocess.run(
            argv,
            input=stdin,
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=STEP_TIMEOUT,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{block.where}: still running after {STEP_TIMEOUT} s: {exc.output}")
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{block.where} exited with {done.returncode}:\n{output}"
    return done.stdout


@pytest.mark.parametrize("example", EXAMPLES, ids=[example.id for example in EXAMPLES])
def test_example_runs(example: Example, tmp_path: Path, background: Background) -> None:
    url = store_url(example.store, tmp_path)
    env = example_env(example, url)
    try:
        for block in example.blocks:
            if "file" in block.markers:
                (tmp_path / block.markers["file"]).write_text(block.code)
            elif "background" in block.markers:
                background.start(block, env)
            else:
                stdout = run_step(block, tmp_path, env)
                if "expect" in block.markers:
                    expected = block.markers["expect"]
                    lines = stdout.splitlines()
                    assert expected in lines, f"{block.where}: no line {expected!r} in {lines}"
    finally:
        background.stop_all()
        drop_store(example.store, url)


def test_every_skip_says_why_and_names_an_existing_check() -> None:
    skipped = [(block, block.skip) for block in ALL_BLOCKS if block.skip is not None]
    for block, (why, covered_by) in skipped:
        assert why.strip(), block.where
        assert (ROOT / covered_by).exists(), f"{block.where}: {covered_by} does not exist"


def test_every_doc_page_is_read() -> None:
    read = {block.path.name for block in ALL_BLOCKS}
    assert "README.md" in read
    assert {"limits.md", "scheduling.md", "dashboard.md"} <= read


def test_markers_are_checked(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("<!-- doc-test: skip: no reason -->\n```sh\nrota status\n```\n")
    with pytest.raises(DocTestMarkupError, match="covered by"):
        examples_of(blocks_of(page))
    page.write_text("<!-- doc-test: sometimes -->\n```sh\nrota status\n```\n")
    with pytest.raises(DocTestMarkupError, match="unknown doc-test marker 'sometimes'"):
        blocks_of(page)
    page.write_text("<!-- doc-test: continue -->\n\nText.\n```sh\nrota status\n```\n")
    with pytest.raises(DocTestMarkupError, match="directly above a code fence"):
        blocks_of(page)
    page.write_text("<!-- doc-test: continue -->\n```sh\nrota status\n```\n")
    with pytest.raises(DocTestMarkupError, match="nothing before it"):
        examples_of(blocks_of(page))


def test_console_blocks_run_only_their_prompt_lines(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```console\n$ rota jobs list \\\n    --state failed\nno jobs\n$ rota status\nok\n```\n"
    )
    [block] = blocks_of(page)
    assert block.commands() == "rota jobs list \\\n    --state failed\nrota status\n"
