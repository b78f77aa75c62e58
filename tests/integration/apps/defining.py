"""A test app that defines its schedule when the module is loaded, as the
docs show: loading it writes to the store (``ROTA_URL``)."""

from __future__ import annotations

from rota import App, every

app = App()


@app.task()
def record(i: int) -> int:
    """Do nothing; the test counts the jobs."""
    return i


app.schedule("late", record, every(seconds=0.5), args=(2,))
