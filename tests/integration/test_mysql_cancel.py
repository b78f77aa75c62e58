"""Cancelling running jobs with real workers, and stopping one whose lease was
lost, on MySQL / MariaDB: the same tests as for the other stores
(tests/integration/test_cancel_running.py, test_lost_leases.py), collected
here again with the MySQL backend."""

from __future__ import annotations

import pytest

from backends import mysql_backends
from integration.test_cancel_running import (  # noqa: F401 (collected with the MySQL backend)
    sender,
    test_a_cancelled_command_has_its_whole_process_group_killed,
    test_a_job_cancelled_while_it_waits_for_a_slot_ends_cancelled_unrun,
    test_async_mode_cancels_the_coroutine,
    test_processes_mode_kills_the_child_and_replaces_it,
    test_threads_mode_runs_on_cancel_callbacks_and_sets_cancelled,
    test_threads_mode_stops_a_task_at_its_check_point,
    worker,
)
from integration.test_lost_leases import (  # noqa: F401 (collected with the MySQL backend)
    test_a_command_whose_lease_was_lost_while_its_worker_was_frozen_is_stopped,
)


@pytest.fixture(params=mysql_backends())
def backend(request: pytest.FixtureRequest) -> str:
    """MySQL / MariaDB only."""
    return str(request.param)
