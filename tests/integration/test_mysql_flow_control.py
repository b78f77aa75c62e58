"""Flow control with real worker processes, on MySQL / MariaDB: concurrency
limits and rates hold across workers, blocked jobs hold up no others,
unique keys are stored once under concurrent senders, breakers open and
probe, a debug queue stops at its first failure. The same tests as for the
other stores, collected here again with the MySQL backend."""

from __future__ import annotations

from backends import mysql_only  # noqa: F401 (the backend fixture: MySQL only)
from integration.test_breaker_holds import (  # noqa: F401 (collected with the MySQL backend)
    test_two_workers_at_concurrency_8_fail_no_more_than_the_threshold,
)
from integration.test_debug_mode import (  # noqa: F401
    test_a_debug_queue_stops_at_its_first_failure,
)
from integration.test_flow_control import (  # noqa: F401
    lab,
    test_a_big_site_does_not_starve_the_small_ones,
    test_a_claim_fills_its_batch_when_many_keys_are_ready,
    test_a_round_of_rate_limited_sites_does_not_hide_other_work,
    test_a_worker_over_its_memory_threshold_holds_back,
    test_blocked_jobs_stay_queued_and_do_not_hold_up_others,
    test_breaker_opens_for_a_failing_site_and_probes_after_cooldown,
    test_concurrency_limit_holds_across_workers_and_changes_at_run_time,
    test_concurrent_senders_store_each_unique_key_once,
    test_idle_workers_start_rate_limited_jobs_at_the_rate,
    test_many_blocked_high_priority_jobs_do_not_hide_runnable_ones,
    test_rate_limit_holds_in_every_window_while_workers_are_busy,
)
