"""A test app whose one task always fails: ``down(i, pause)`` sleeps ``pause``
seconds, then raises. Tests send it with a breaker declared on their side
(limit keys travel with the job)."""

from __future__ import annotations

import time

from rota import App

app = App()


@app.task()
def down(i: int, pause: float = 0.0) -> None:
    """Fail, as a call to a site that is down would, after ``pause`` seconds."""
    time.sleep(pause)
    raise ConnectionError(f"call {i}: the site is down")
