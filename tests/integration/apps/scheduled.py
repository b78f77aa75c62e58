"""A test app with fast schedules, defined when the module is loaded (as on a deploy).

``rota scheduler scheduled.py:app`` creates the schedules on first start and
leaves them alone when more schedulers load the same module. The store URL
comes from ``ROTA_URL``. Together the schedules fire about 82 times a second,
all of them catching up every missed fire (``misfire="all"``), so a test can
count that no fire is ever missed or doubled.
"""

from __future__ import annotations

from rota import App, cron, every

app = App()

#: Schedules firing every 0.1 s, all at the same instants (every() is epoch-anchored).
TENTHS = 8


@app.task(name="beat")
def beat(n: int) -> int:
    """Do nothing; the test counts the jobs, not their runs."""
    return n


for index in range(TENTHS):
    app.schedule(f"tenth-{index}", beat, every(0.1), args=(index,), misfire="all")
app.schedule("second-cron", beat, cron("* * * * * *"), args=(100,), misfire="all")
app.schedule("second-every", beat, every(seconds=1), args=(101,), misfire="all")
