"""Stop signals taken without a lock in the handler (rota._signals)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

import rota._signals
from rota._signals import REPEAT_WINDOW, StopSignals


@pytest.fixture
def handlers_restored() -> Iterator[None]:
    """SIGTERM's and SIGINT's handlers put back after the test."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)


def test_a_signal_ends_the_wait_under_way_at_once(handlers_restored: None) -> None:
    signals = StopSignals()
    signals.install()
    assert not signals.is_set()
    threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGTERM)).start()
    started = time.monotonic()
    assert signals.wait(10.0) == signal.SIGTERM
    assert time.monotonic() - started < 5.0
    assert signals.is_set() and signals.received == 1
    assert signals.wait(0.01) is None, "each signal ends one wait"


def test_a_wake_from_another_thread_ends_the_wait() -> None:
    signals = StopSignals()
    threading.Timer(0.05, signals.wake).start()
    started = time.monotonic()
    assert signals.wait(10.0) is None
    assert time.monotonic() - started < 5.0
    assert not signals.is_set()


def test_the_second_signal_on_runs_the_repeat_hook_in_the_handler(
    handlers_restored: None,
) -> None:
    seen: list[int] = []
    signals = StopSignals(on_repeat=seen.append)
    signals.install()
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGTERM):
        os.kill(os.getpid(), signum)  # (handled before os.kill returns: the main thread)
    assert signals.received == 3
    assert seen == [2, 3]
    assert [signals.wait(0.01) for _ in range(4)] == [
        signal.SIGINT,
        signal.SIGTERM,
        signal.SIGTERM,
        None,
    ]


def test_the_same_signal_again_within_the_window_is_the_same_request(
    handlers_restored: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GNU timeout signals its command, then the process group it is in."""
    now = [100.0]
    monkeypatch.setattr(rota._signals.time, "monotonic", lambda: now[0])
    seen: list[int] = []
    signals = StopSignals(on_repeat=seen.append)
    signals.install()
    os.kill(os.getpid(), signal.SIGTERM)
    now[0] += REPEAT_WINDOW / 2
    os.kill(os.getpid(), signal.SIGTERM)
    assert (signals.received, seen) == (1, [])
    now[0] += REPEAT_WINDOW
    os.kill(os.getpid(), signal.SIGTERM)  # a second request: the repeat hook runs
    assert (signals.received, seen) == (2, [2])
    assert [signals.wait(0.01) for _ in range(4)] == [signal.SIGTERM, None, signal.SIGTERM, None]


# A main thread waiting in short steps while another process sends it signals
# as fast as it can: a handler that set a threading.Event there would, sooner
# or later, run inside the Event's own locked section and wait for itself.
# (On a loaded machine the whole storm may land before the first wait.)
_STORM = """
import os, subprocess
from rota._signals import StopSignals

signals = StopSignals()
signals.install()
pid = os.getpid()
sender = subprocess.Popen(
    ["sh", "-c", f"i=0; while [ $i -lt 3000 ]; do kill -TERM {pid} || exit 0; i=$((i+1)); done"]
)
waits = 0
while waits == 0 or sender.poll() is None:
    signals.wait(0.0005)
    waits += 1
print(waits, signals.received)
"""


def test_a_storm_of_signals_during_waits_never_hangs_the_waiting_thread() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _STORM], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    waits, received = (int(n) for n in done.stdout.split())
    assert waits > 0 and received > 0
