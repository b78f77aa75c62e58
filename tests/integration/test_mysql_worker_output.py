"""A worker's output and stop with real processes, on MySQL / MariaDB: a
line per finished job (or JSON lines, or only the failures for good), each
attempt's worker and host, a timed-out thread's slot given to a fresh one,
and a stop that gives a job back only once what runs it is dead. The same
tests as for the other stores, collected here again with the MySQL
backend."""

from __future__ import annotations

from backends import mysql_only  # noqa: F401 (the backend fixture: MySQL only)
from integration.test_worker_output import (  # noqa: F401 (collected with the MySQL backend)
    sender,
    test_a_line_per_finished_job_at_info_and_a_failure_for_good_at_warning,
    test_a_timed_out_thread_gives_its_slot_to_a_fresh_one,
    test_each_attempt_records_the_worker_and_host,
    test_json_log_lines,
    test_quiet_prints_only_the_jobs_that_failed_for_good,
)
from integration.test_worker_stop import (  # noqa: F401
    test_a_command_goes_back_to_the_queue_only_once_its_group_is_dead,
    test_a_job_goes_back_to_the_queue_only_once_its_runner_is_dead,
    test_a_thread_task_left_running_is_asked_to_stop_before_its_release,
)
