"""The worker fault tests with real processes, on MySQL / MariaDB: two
workers run every job once, a worker killed with SIGKILL loses nothing
(and workers of every kind killed nine times in turn lose nothing), three
schedulers fire every time once despite a kill, a second signal exits at
once and the lease brings the job back, retries back off, and a busy
worker leaves new jobs to an idle one. The same tests as for the other
stores, collected here again with the MySQL backend."""

from __future__ import annotations

import pytest

from backends import mysql_backends
from integration.test_dispatch_by_load import (  # noqa: F401
    test_a_busy_worker_leaves_new_jobs_to_an_idle_one,
)
from integration.test_execution_modes import (  # noqa: F401 (collected with the MySQL backend)
    sender,
    test_a_second_signal_exits_at_once_and_the_lease_brings_the_job_back,
    test_retries_with_backoff_then_success_or_dead_letter,
)
from integration.test_schedulers import (  # noqa: F401
    test_three_schedulers_fire_every_time_exactly_once_despite_a_kill,
)
from integration.test_workers import (  # noqa: F401
    test_killed_worker_loses_nothing,
    test_two_workers_run_every_job_exactly_once,
    test_workers_killed_again_and_again_lose_nothing,
)


@pytest.fixture(params=mysql_backends())
def backend(request: pytest.FixtureRequest) -> str:
    """MySQL / MariaDB only."""
    return str(request.param)
