"""The worker fault tests with real processes, on MySQL / MariaDB: two
workers run every job once, a worker killed with SIGKILL loses nothing
(and workers of every kind killed nine times in turn lose nothing), three
schedulers fire every time once despite a kill, a second signal exits at
once and the lease brings the job back, retries back off, timeouts stop
jobs in every mode, held jobs are given back at a stop, and a busy worker
leaves new jobs to an idle one. The same tests as for the other
stores, collected here again with the MySQL backend."""

from __future__ import annotations

from backends import mysql_only  # noqa: F401 (the backend fixture: MySQL only)
from integration.test_dispatch_by_load import (  # noqa: F401
    test_a_busy_worker_leaves_new_jobs_to_an_idle_one,
)
from integration.test_execution_modes import (  # noqa: F401 (collected with the MySQL backend)
    sender,
    test_a_hang_up_drains_the_worker_unless_it_runs_under_nohup,
    test_a_held_jobs_timeout_counts_from_its_start_not_its_claim,
    test_a_job_of_a_task_the_worker_lacks_waits_for_a_worker_that_has_it,
    test_a_second_signal_exits_at_once_and_the_lease_brings_the_job_back,
    test_a_snoozing_job_runs_again_without_using_a_retry,
    test_a_worker_of_long_jobs_holds_none_beyond_its_slots,
    test_async_mode_cancels_a_coroutine_at_its_timeout,
    test_processes_mode_children_run_the_worker_hooks,
    test_processes_mode_holds_prefetched_jobs_and_releases_them_at_shutdown,
    test_processes_mode_kills_a_job_over_its_timeout_and_replaces_the_child,
    test_processes_mode_survives_a_child_that_dies,
    test_retries_with_backoff_then_success_or_dead_letter,
    test_threads_mode_reports_a_timeout_at_the_deadline,
)
from integration.test_schedulers import (  # noqa: F401
    test_three_schedulers_fire_every_time_exactly_once_despite_a_kill,
)
from integration.test_workers import (  # noqa: F401
    test_killed_worker_loses_nothing,
    test_two_workers_run_every_job_exactly_once,
    test_workers_killed_again_and_again_lose_nothing,
)
