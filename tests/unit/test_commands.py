"""Commands as jobs: the output tail, and the checks a command line gets before it is sent."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers import wait_for, written
from procs import alive
from rota import App, Registry
from rota.commands import (
    COMMAND_TASK,
    CommandFailed,
    CommandSpec,
    CommandTask,
    Tail,
    command_options_of,
    guarded,
    run,
    shown_kwargs,
)
from rota.errors import InvalidArgument
from rota.scheduling import every


def test_tail_keeps_the_last_bytes_and_says_when_it_dropped_some() -> None:
    tail = Tail(5)
    tail.write(b"abc")
    assert (tail.text(), tail.truncated) == ("abc", False)
    tail.write(b"de")
    assert (tail.text(), tail.truncated) == ("abcde", False)
    tail.write(b"fgh")
    assert (tail.text(), tail.truncated, tail.total) == ("defgh", True, 8)
    tail.write(b"0123456789")
    assert tail.text() == "56789"


def test_tail_replaces_a_character_cut_in_half() -> None:
    tail = Tail(3)
    tail.write("aé€".encode())  # a, 2 bytes, 3 bytes: the cap keeps the euro sign only
    assert tail.text() == "€"
    tail.write(b"\xff")
    assert tail.text() == "\ufffd\ufffd\ufffd"


@pytest.mark.parametrize(
    ("argv", "options", "message"),
    [
        ("echo hi", {}, r"argv must be a list of strings such as \['echo', 'hi'\]"),
        ([], {}, "non-empty list of strings"),
        (["echo", 3], {}, r"argv\[1\] must be a string"),
        (["", "x"], {}, r"argv\[0\], the program, must not be empty"),
        (["a\0b"], {}, "without NUL"),
        (["echo"], {"shell": True}, "with shell=True, argv is one command line string"),
        (["echo"], {"shell": "yes"}, "shell must be True or False"),
        (["echo"], {"ok_codes": []}, "ok_codes must be a non-empty list"),
        (["echo"], {"ok_codes": [0, 256]}, "ok_codes item must be"),
        (["echo"], {"timeout": 0}, "timeout"),
        (["echo"], {"grace": -1}, "grace"),
        (["echo"], {"output_cap": 0}, "output_cap"),
        (["echo"], {"env": {"A=B": "x"}}, "env name 'A=B'"),
        (["echo"], {"env": {"A": 1}}, "env value of A must be a string"),
        (["echo"], {"cwd": ""}, "cwd must be a directory path"),
    ],
)
def test_bad_command_lines_are_refused_with_what_to_fix(
    argv: Any, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidArgument, match=message):
        CommandSpec.build(argv, **options)


def test_command_lines_are_off_unless_enabled() -> None:
    assert COMMAND_TASK not in App("sqlite:///unused.db").tasks
    assert COMMAND_TASK in App("sqlite:///unused.db", commands=True).tasks


def test_the_name_of_the_built_in_task_is_reserved() -> None:
    reserved = re.escape("the task name 'rota.cmd' is reserved")
    app = App("sqlite:///unused.db")
    with pytest.raises(InvalidArgument, match=reserved):
        app.command(COMMAND_TASK, ["echo"])
    with pytest.raises(InvalidArgument, match=reserved):
        app.task(name=COMMAND_TASK)(print)
    library = Registry()
    with pytest.raises(InvalidArgument, match=reserved):
        library.task(name=COMMAND_TASK)(print)
    assert app.tasks == library.tasks == {}
    app.enable_commands()  # so the built-in is the one that runs command lines
    builtin = app.get_task(COMMAND_TASK)
    assert isinstance(builtin, CommandTask)
    assert builtin.new_job((["echo", "hi"],), {}).task == COMMAND_TASK


def test_a_bad_command_is_refused_at_registration_and_nothing_is_registered() -> None:
    app = App("sqlite:///unused.db")
    with pytest.raises(InvalidArgument, match="argv must be a list"):
        app.command("job", "echo hi")
    assert "job" not in app.tasks
    app.command("job", ["echo"])
    with pytest.raises(InvalidArgument, match="already registered"):
        app.command("job", ["echo"])


def test_sending_a_bad_call_stores_nothing(tmp_path: Path) -> None:
    app = App(f"sqlite:///{tmp_path / 'rota.db'}", commands=True)
    echo = app.command("echo", ["echo"])
    builtin = app.get_task(COMMAND_TASK)
    with pytest.raises(InvalidArgument, match="extra_args must be a list of strings"):
        echo.send(extra_args="x")
    with pytest.raises(InvalidArgument, match="only extra_args"):
        echo.send("positional")
    with pytest.raises(InvalidArgument, match="takes one argument, the command line"):
        builtin.send()
    with pytest.raises(InvalidArgument, match="unknown option"):
        builtin.send(["echo"], colour=True)
    with pytest.raises(InvalidArgument, match=r"argv\[0\]"):
        builtin.options(queue="q").send([""])
    assert sum(sum(q.counts.values()) for q in app.store.queues()) == 0
    app.close()


def test_a_schedule_of_a_bad_call_is_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    """Schedules check a command call as sending does, however they are made:
    else every fire would fail."""
    app = App(f"sqlite:///{tmp_path / 'rota.db'}", commands=True)
    report = app.command("report", ["echo", "report"])
    calls: list[tuple[Any, str]] = [
        (lambda: app.schedule("s", report, every(60), args=("a", "b")), "only extra_args"),
        (lambda: app.schedule("s", "report", every(60), args=("a",)), "only extra_args"),
        (lambda: app.admin.add_schedule("s", "report", every(60), args=["a"]), "only extra_args"),
        (lambda: app.admin.add_schedule("s", COMMAND_TASK, every(60), args=["echo hi"]), "argv"),
        (lambda: app.admin.add_schedule("s", COMMAND_TASK, every(60), args=[[]]), "non-empty"),
        (
            lambda: app.admin.add_schedule(
                "s", COMMAND_TASK, every(60), args=[["echo"]], kwargs={"ok_codes": "zero"}
            ),
            "ok_codes",
        ),
        (
            lambda: app.admin.add_schedule(
                "s", COMMAND_TASK, every(60), args=[["echo"]], kwargs={"bogus": 1}
            ),
            "unknown option",
        ),
        (
            lambda: app.admin.add_schedule(
                "s", COMMAND_TASK, every(60), args=[["echo"]], kwargs={"timeout": "abc"}
            ),
            "timeout",
        ),
    ]
    for call, message in calls:
        with pytest.raises(InvalidArgument, match=message):
            call()
    assert app.store.schedules() == []
    app.admin.add_schedule("s", COMMAND_TASK, every(60), args=[["echo", "hi"]])
    assert [s.name for s in app.store.schedules()] == ["s"]
    app.close()


def test_extra_args_are_appended_and_shell_quoted_for_a_shell_line() -> None:
    plain = CommandSpec.build(["echo", "a"]).extended(["b c"])
    assert plain.argv == ("echo", "a", "b c")
    shell = CommandSpec.build("echo a", shell=True).extended(["b c", "$HOME"])
    assert shell.argv == ("echo a 'b c' '$HOME'",)
    assert run(shell)["stdout"] == "a b c $HOME\n"


def test_a_failure_names_the_code_and_the_last_lines_of_stderr() -> None:
    script = "for i in $(seq 1 30); do echo line$i >&2; done; exit 3"
    with pytest.raises(CommandFailed) as failed:
        run(CommandSpec.build(["sh", "-c", script]))
    message = str(failed.value)
    assert "exited with code 3: line30\nlast lines of stderr:\n" in message
    assert message.endswith(
        "line21\nline22\nline23\nline24\nline25\nline26\nline27\nline28\nline29\nline30"
    )
    assert "line20\n" not in message


@pytest.mark.parametrize(
    ("argv", "quoted"),
    [
        (["sh", "-c", "exit 3"], "\"sh -c 'exit 3'\""),
        (["sh", "-c", 'echo "a b"; exit 3'], "`sh -c 'echo \"a b\"; exit 3'`"),
    ],
)
def test_a_failure_quotes_the_command_line_as_it_reads(argv: list[str], quoted: str) -> None:
    with pytest.raises(CommandFailed) as failed:
        run(CommandSpec.build(argv))
    assert str(failed.value).startswith(f"command {quoted} exited with code 3")


def test_the_duration_is_the_commands_own_not_the_wait_for_a_process_that_left_it() -> None:
    # the escaped sleep holds the pipes open for 1.5 s: its output is waited
    # for. The shell ends only once the sleep has left its process group
    # (field 5 of /proc/PID/stat): one still in it when the command ends is
    # the command's own, and goes with it.
    left_group = (
        "setsid sleep 1.5 & "
        'while [ "$(cut -d" " -f5 /proc/$!/stat)" = "$(cut -d" " -f5 /proc/$$/stat)" ]; '
        "do sleep 0.01; done; echo bye"
    )
    spec = CommandSpec.build(["sh", "-c", left_group], grace=1.0)
    started = time.monotonic()
    result = run(spec)
    assert time.monotonic() - started >= 1.0
    assert result["stdout"] == "bye\n" and result["duration"] < 0.5, result


def test_a_missing_program_is_a_failure_that_names_it() -> None:
    with pytest.raises(CommandFailed, match="cannot start no-such-program-here: No such file"):
        run(CommandSpec.build(["no-such-program-here"]))


def test_a_file_that_is_not_a_program_is_a_failure_that_names_it(tmp_path: Path) -> None:
    script = tmp_path / "notes.txt"
    script.write_text("not a program\n")
    with pytest.raises(CommandFailed, match=f"Permission denied: '{script}'"):
        run(CommandSpec.build([str(script)]))


def _guard(
    script: str, grace: float, lease: float | None = None
) -> tuple[subprocess.Popen[bytes], int]:
    """A guard running ``sh -c script`` (started), and the worker's end of its
    watch pipe: closing it is what a worker's death does."""
    watch_read, watch = os.pipe()
    status_read, status = os.pipe()
    guard = subprocess.Popen(
        guarded(["sh", "-c", script], watch_read, status, grace, lease),
        start_new_session=True,
        pass_fds=(watch_read, status),
    )
    os.close(watch_read)
    os.close(status)
    with os.fdopen(status_read, "rb") as reply:
        assert reply.read() == b"ok"
    return guard, watch


@pytest.fixture
def guards() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Guards a test starts; each one's group is killed at teardown, pass or fail."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for guard in started:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(guard.pid, signal.SIGKILL)
        guard.wait(10)


def test_the_guard_stops_the_group_once_its_worker_is_gone(
    tmp_path: Path, guards: list[subprocess.Popen[bytes]]
) -> None:
    # a command that outlives its worker (here: a pipe end closed, as a
    # worker's is when it dies) gets SIGTERM, and SIGKILL a grace later
    pid_file = tmp_path / "pids"
    guard, watch = _guard(f'trap "" TERM; sleep 60 & echo $! > {pid_file}; wait', 0.3)
    guards.append(guard)
    sleeper = int(written(pid_file, what="the command"))
    os.close(watch)  # the worker is gone
    assert guard.wait(timeout=10) == -signal.SIGKILL  # after the stubborn shell's grace
    wait_for(lambda: not alive(sleeper), what="the group's last process to end")


def test_an_orphaned_group_gets_half_the_lease_when_its_grace_is_longer(
    tmp_path: Path, guards: list[subprocess.Popen[bytes]]
) -> None:
    # the job's lease runs out a lease after its last renewal, when another
    # worker may start it: the group is dead before, whatever its grace
    pid_file = tmp_path / "pids"
    guard, watch = _guard(f'trap "" TERM; sleep 60 & echo $! > {pid_file}; wait', 60, lease=1.0)
    guards.append(guard)
    sleeper = int(written(pid_file, what="the command"))
    os.close(watch)
    closed = time.monotonic()
    assert guard.wait(timeout=10) == -signal.SIGKILL
    assert 0.5 <= time.monotonic() - closed < 0.5 + 1.0
    wait_for(lambda: not alive(sleeper), what="the group's last process to end")


def test_an_orphaned_guard_ends_as_soon_as_its_command_and_group_are_gone(
    tmp_path: Path, guards: list[subprocess.Popen[bytes]]
) -> None:
    # the command ends on SIGTERM; its child takes 0.5 s more: the guard
    # ends once both are gone, as the command did, not a grace (60 s) later
    pid_file = tmp_path / "pids"
    child = f'trap "sleep 0.5; exit 0" TERM; echo $$ > {pid_file}; while :; do sleep 0.05; done'
    guard, watch = _guard(f"sh -c '{child}' & wait", 60, lease=120.0)
    guards.append(guard)
    lingering = int(written(pid_file, what="the command's child"))
    os.close(watch)
    closed = time.monotonic()
    assert guard.wait(timeout=10) == -signal.SIGTERM
    assert not alive(lingering)
    assert 0.5 <= time.monotonic() - closed < 0.5 + 1.0


def test_a_timeout_says_what_sigkill_hit() -> None:
    # the command itself outlived its SIGTERM
    deaf = CommandSpec.build(
        ["sh", "-c", 'trap "" TERM; while :; do sleep 0.05; done'], timeout=0.3, grace=0.2
    )
    with pytest.raises(CommandFailed) as failed:
        run(deaf)
    assert (
        "was killed by SIGKILL after timeout 0.3 s (still running 0.2 s after its SIGTERM)"
        in str(failed.value)
    )
    # the command ended on the SIGTERM, a process it started did not
    script = """sh -c 'trap "" TERM; while :; do sleep 0.05; done' & wait"""
    with pytest.raises(CommandFailed) as failed:
        run(CommandSpec.build(["sh", "-c", script], timeout=0.3, grace=0.2))
    assert str(failed.value).endswith(
        "was killed by SIGTERM after timeout 0.3 s; "
        "processes it left in its group got SIGKILL 0.2 s after the SIGTERM"
    )


def test_a_missing_working_directory_is_named_as_such(tmp_path: Path) -> None:
    missing = str(tmp_path / "gone")
    with pytest.raises(CommandFailed, match=f"its working directory '{missing}' does not exist"):
        run(CommandSpec.build(["true"], cwd=missing))


def test_a_grandchild_that_leaves_the_group_holds_the_job_up_one_grace_at_most(
    tmp_path: Path,
) -> None:
    # setsid puts it out of the command's process group (out of rota's reach):
    # the job ends once the readers' one grace for both pipes is over
    pid_file = tmp_path / "pid"
    # (the command waits for the pid: a group killed before setsid ran would
    # take the grandchild with it)
    escape = (
        f"setsid sh -c 'echo $$ > \"{pid_file}\"; exec sleep 30' & "
        f'while [ ! -s "{pid_file}" ]; do sleep 0.01; done; echo done'
    )
    spec = CommandSpec.build(["sh", "-c", escape], grace=0.5)
    started = time.monotonic()
    try:
        result = run(spec)
    finally:
        wait_for(pid_file.exists, timeout=10, what="the grandchild's pid")
        os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert result["stdout"] == "done\n"
    assert time.monotonic() - started < 0.5 + 1.0 + 1.0


def test_env_adds_to_the_environment_and_ok_codes_decide_success(tmp_path: Path) -> None:
    spec = CommandSpec.build(
        ["sh", "-c", 'echo "$ROTA_TEST_X:$PWD"; exit 4'],
        env={"ROTA_TEST_X": "yes"},
        cwd=str(tmp_path),
        ok_codes=[0, 4],
    )
    result = run(spec)
    assert result["exit_code"] == 4
    assert result["stdout"] == f"yes:{tmp_path}\n"
    assert result["truncated"] == {"stdout": False, "stderr": False}


def test_a_command_calls_options_read_as_one_line_with_env_names_only() -> None:
    options = {"timeout": 5, "ok_codes": [0, 2], "env": {"TOKEN": "s3cr3t", "A": "1"}}
    assert command_options_of(COMMAND_TASK, options | {"cwd": "/srv", "shell": True}) == (
        "through /bin/sh, timeout 5 s, ok codes 0 2, cwd /srv, env A TOKEN"
    )
    assert command_options_of(COMMAND_TASK, {"timeout": "abc"}) == "timeout 'abc'"  # as stored
    assert command_options_of(COMMAND_TASK, {}) == command_options_of("add", options) == ""


def test_a_command_calls_env_is_shown_with_its_names_only() -> None:
    call = {"env": {"TOKEN": "s3cr3t", "A": "1"}, "timeout": 5}
    assert shown_kwargs(COMMAND_TASK, call) == {"env": {"TOKEN": "***", "A": "***"}, "timeout": 5}
    assert call["env"] == {"TOKEN": "s3cr3t", "A": "1"}, "the call itself is left as it is"
    assert shown_kwargs(COMMAND_TASK, {"env": "TOKEN=s3cr3t"}) == {"env": "***"}  # as stored
    for kwargs in ({"timeout": 5}, {"env": None}, [1], None):
        assert shown_kwargs(COMMAND_TASK, kwargs) == kwargs
    assert shown_kwargs("deploy", call) is call, "another task's env is its own argument"
