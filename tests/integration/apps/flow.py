"""A test app for flow control: tasks that record when and where they ran.

Workers load it as ``flow.py:app``; the tests send jobs through :func:`sender`,
which declares the same task names with their limits (keys are resolved when
a job is sent, so the workers need only the function bodies).

``$ROTA_TEST_LOG`` receives one line per execution::

    start end pid job_id attempt key

``fetch`` fails while a file named after its host exists in
``$ROTA_TEST_FAILING`` (a directory), so a test can make a site go down and
come back.

Run as a script it is a sender process for the uniqueness test::

    python flow.py URL MODE START COUNT   # MODE: many | one
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

from rota import App, Breaker, Limit, Rate, current_job

app = App(lease=float(os.environ.get("ROTA_TEST_LEASE", "30")))


def host_of(url: str, pause: float = 0.0) -> str:
    """The limit key of a URL: its host."""
    return urlsplit(url).netloc


def key_of(key: str, pause: float = 0.0) -> str:
    """The limit key of a ``work`` job: its first argument."""
    return key


def _record(start: float, key: str) -> None:
    job = current_job()
    line = f"{start:.6f} {time.time():.6f} {os.getpid()} {job.id} {job.attempt} {key}\n"
    with open(os.environ["ROTA_TEST_LOG"], "a") as log:
        log.write(line)


def work(key: str, pause: float = 0.0) -> str:
    """Sleep ``pause`` seconds and record the run under ``key``."""
    start = time.time()
    time.sleep(pause)
    _record(start, key)
    return key


def fetch(url: str, pause: float = 0.0) -> str:
    """Pretend to fetch ``url``: fail if its host is marked as failing."""
    start = time.time()
    time.sleep(pause)
    host = host_of(url)
    _record(start, host)
    if (Path(os.environ["ROTA_TEST_FAILING"]) / host).exists():
        raise ConnectionError(f"{host} is down")
    return url


def page(url: str) -> str:
    """A job that is only ever sent, never run (uniqueness)."""
    return url


#: Task names and bodies; :func:`sender` adds the limits.
TASKS = {"work": work, "paced": work, "site": work, "fetch": fetch, "page": page}
for _name, _fn in TASKS.items():
    app.task(name=_name)(_fn)


def sender(url: str, *, spiders: int = 4, rate: str = "20/s", cooldown: float = 1.5) -> App:
    """An app on ``url`` with the tasks' flow-control declarations, for sending."""
    sending = App(url)
    sending.task(name="work", concurrency=Limit("spiders", spiders))(work)
    sending.task(name="paced", rate=Rate(rate, burst=5, key="paced"))(work)
    sending.task(name="site", concurrency=Limit(key_of, 2))(work)
    sending.task(
        name="fetch",
        concurrency=Limit(host_of, 1),
        breaker=Breaker(3, cooldown, key=host_of),
    )(fetch)
    sending.task(name="page", unique=lambda url: url, unique_for="7d")(page)
    return sending


def _send_unique(url: str, mode: str, start: int, count: int) -> None:
    """Send pages ``start .. start+count-1`` (wrapping at ``count``) and print
    one ``url id duplicate`` line per page."""
    task = sender(url).tasks["page"]
    urls = [f"https://site.example/{(start + i) % count}" for i in range(count)]
    if mode == "many":
        handles = []
        for offset in range(0, count, 50):
            handles += task.send_many([(u,) for u in urls[offset : offset + 50]])
    else:
        handles = [task.send(u) for u in urls]
    for u, handle in zip(urls, handles, strict=True):
        print(u, handle.id, int(handle.duplicate))


if __name__ == "__main__":
    _send_unique(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
