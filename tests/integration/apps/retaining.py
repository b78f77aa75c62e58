"""A test app whose workers keep finished jobs one second: their retention
pass purges any job finished before that."""

from __future__ import annotations

from rota import App

app = App(retention="1s")


@app.task()
def carry(text: str) -> int:
    """Carry ``text`` (a large argument) and return its length."""
    return len(text)
