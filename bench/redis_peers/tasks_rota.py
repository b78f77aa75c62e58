"""The no-op task for rota (the store URL comes from ROTA_URL)."""

from rota import App

app = App()


@app.task(name="noop")
def noop(i: int) -> int:
    """Do nothing; return the argument."""
    return i
