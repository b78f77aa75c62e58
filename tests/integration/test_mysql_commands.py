"""Commands as jobs, cancelling running jobs and host targeting with real
worker processes, on MySQL / MariaDB: a command's whole process tree is
stopped after its timeout, a worker's stop or death, a cancel and a lost
lease; exit codes, retries with backoff, output and command schedules
under ``rota scheduler`` work; a running job is cancelled in every mode; a
job sent to a host runs there, and elsewhere once the host is gone. The
same tests as for the other stores, collected here again with the MySQL
backend (job logs: ``test_mysql_job_logs.py``)."""

from __future__ import annotations

from backends import mysql_only  # noqa: F401 (the backend fixture: MySQL only)
from integration.test_cancel_running import (  # noqa: F401 (collected with the MySQL backend)
    sender,
    test_a_cancelled_command_has_its_whole_process_group_killed,
    test_a_job_cancelled_while_it_waits_for_a_slot_ends_cancelled_unrun,
    test_async_mode_cancels_the_coroutine,
    test_processes_mode_kills_the_child_and_replaces_it,
    test_threads_mode_cancels_an_async_task,
    test_threads_mode_cancels_an_async_task_at_its_timeout,
    test_threads_mode_logs_a_cancelled_job_as_cancelled,
    test_threads_mode_runs_on_cancel_callbacks_and_sets_cancelled,
    test_threads_mode_stops_a_task_at_its_check_point,
    test_threads_mode_tells_a_task_over_its_timeout_to_stop,
    worker,
)
from integration.test_commands import (  # noqa: F401
    lingering_pids,
    test_a_command_schedule_fires_under_rota_scheduler,
    test_a_failing_command_is_retried_with_backoff,
    test_a_fork_of_a_task_does_not_keep_a_command_alive_past_its_worker,
    test_a_stopped_worker_kills_the_tree_and_releases_the_job,
    test_a_timeout_kills_the_whole_tree,
    test_a_worker_killed_with_sigkill_leaves_no_process_of_its_commands,
    test_ok_codes_decide_success_and_a_failure_names_code_and_stderr,
    test_rota_run_with_commands_retries_a_failed_command_schedule,
    test_rota_send_cmd_runs_under_a_worker,
    test_the_output_keeps_its_tail,
)
from integration.test_host_targeting import (  # noqa: F401
    test_jobs_sent_to_a_host_run_there_and_elsewhere_once_it_is_gone,
    test_rota_run_serves_the_host_name_of_its_worker_host_option,
)
from integration.test_lost_leases import (  # noqa: F401
    test_a_command_whose_lease_was_lost_while_its_worker_was_frozen_is_stopped,
)
