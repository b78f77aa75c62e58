"""Job logs with real worker processes, on MySQL / MariaDB: what a job
writes (prints, logger lines, stderr, a command's output, NUL bytes) is
kept per attempt, capped with the drop noted, followed by ``rota jobs logs
--follow`` and deleted with its job. The same tests as for the other
stores, collected here again with the MySQL backend."""

from __future__ import annotations

from backends import mysql_only  # noqa: F401 (the backend fixture: MySQL only)
from integration.test_job_logs import (  # noqa: F401 (collected with the MySQL backend)
    sender,
    test_a_commands_output_is_kept,
    test_async_mode_keeps_a_coroutines_output,
    test_follow_prints_lines_while_the_job_runs_and_returns_when_it_ends,
    test_logs_go_with_the_job,
    test_nul_in_output_and_errors_is_kept_written_out_on_every_store,
    test_over_the_cap_the_oldest_lines_are_dropped_and_noted,
    test_prints_logger_lines_and_stderr_are_kept_per_attempt,
)
