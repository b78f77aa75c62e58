"""Starting a command imports what it uses: a worker or a send on SQLite
loads neither rich (tables and coloured errors) nor croniter (cron
expressions), a tenth of a command's start each."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = """
import sys
import rota.cli, rota.cli.{module}
from rota import App
App("sqlite:///:memory:")
print(" ".join(sorted(m for m in ("rich", "croniter", "dateutil") if m in sys.modules)))
"""


def _loaded_by(module: str) -> list[str]:
    probe = PROBE.format(module=module)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


@pytest.mark.parametrize("module", ["worker", "send"])
def test_a_command_loads_neither_rich_nor_croniter_unless_used(module: str) -> None:
    assert _loaded_by(module) == []


def test_a_cron_schedule_loads_croniter_when_it_is_parsed() -> None:
    probe = (
        "import sys\n"
        "from rota.scheduling import cron\n"
        "assert 'croniter' not in sys.modules\n"
        "print(cron('*/5 * * * *').next_fire(0.0))\n"
        "assert 'croniter' in sys.modules\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) == 300.0
