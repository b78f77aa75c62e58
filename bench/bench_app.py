"""The tasks the benchmarks run."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from rota import App

app = App(os.environ.get("ROTA_URL", "sqlite:///bench.db"))

#: The Redis a ``roundtrip`` job talks to, and the counter it increments
#: (``bench.py --body roundtrip`` sets both for each run).
BODY_URL = os.environ.get("BENCH_BODY_URL", "redis://127.0.0.1:6379/9")
BODY_KEY = os.environ.get("BENCH_BODY_KEY", "bench:body")
_body: tuple[int, Any] | None = None  # (pid, client): made again after a fork
_making = threading.Lock()


@app.task()
def noop() -> None:
    """Does nothing: measures rota's own overhead."""


@app.task()
def roundtrip() -> None:
    """One Redis round trip of its own (a pipelined ``INCR``): a short job
    that does I/O, as most jobs do."""
    global _body
    found = _body
    if found is None or found[0] != os.getpid():
        import redis

        with _making:  # one client per process, made once
            if _body is None or _body[0] != os.getpid():
                _body = (os.getpid(), redis.Redis.from_url(BODY_URL))
            found = _body
    pipe = found[1].pipeline(transaction=False)
    pipe.execute_command("INCR", BODY_KEY)
    pipe.execute()


@app.task()
def stamp() -> float:
    """Returns the time it started, for enqueue-to-start latency."""
    return time.time()


@app.task()
def sleepy(seconds: float) -> None:
    """Sleeps: an I/O-bound job."""
    time.sleep(seconds)
