"""A test app for faults a worker must survive: jobs it cannot decode, and an
error that escapes the code running a task."""

from __future__ import annotations

from rota import App

app = App()


@app.task(retries=3, backoff=(0.05, 0.1))
def echo(value: int) -> int:
    """Returns its argument; retried, so a job failed at once shows no retry."""
    return value


class Unprintable(Exception):
    """An exception whose message cannot be formatted."""

    def __str__(self) -> str:
        raise RuntimeError("this exception cannot be printed")


@app.task(retries=3, backoff=(0.05, 0.1))
def unprintable() -> None:
    """Raises an exception that breaks the formatting of its own failure."""
    raise Unprintable()


@app.task()
def undecodable_name() -> None:
    """Fails with a message that holds a lone surrogate, as a file name
    decoded with ``surrogateescape`` does."""
    name = b"report-\xff.csv".decode(errors="surrogateescape")
    raise FileNotFoundError(f"no such file: {name}")
