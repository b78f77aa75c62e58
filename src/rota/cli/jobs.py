"""``rota jobs ...``: list, show, logs, retry, cancel, delete and export jobs."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

import click
from rich.console import Group
from rich.table import Table
from rich.text import Text

from rota._log_runs import LogHeadings
from rota._time import format_duration
from rota._wording import attempt_text, retry_text, snooze_reason, still_running
from rota.admin import cancel_refusal, delete_refusal, retry_refusal
from rota.cli._actor import cli_actor
from rota.cli._progress import counted
from rota.cli._steering import batched, refused, resolve, steer
from rota.cli._support import (
    CliError,
    CliState,
    console,
    fmt_time,
    fmt_when,
    name_callback,
    note,
    pass_state,
    read_url_option,
    summary,
    url_option,
)
from rota.commands import command_line_of, shown_kwargs
from rota.diagnose import job_problem
from rota.errors import InvalidArgument, JobNotFound
from rota.models import Job, JobQuery, JobState, parse_state
from rota.stores.base import MAX_LOG_PAGE

__all__ = ["jobs"]

#: Seconds between two looks at a followed job's log.
_FOLLOW_POLL = 0.25
#: Seconds ``jobs list`` goes on reading pages that came back empty with a
#: cursor (a store may scan only so many jobs per call) before it stops and
#: prints the cursor to go on from.
_SCAN_BUDGET = 10.0
#: States after which a job writes no more output.
FINISHED_STATES = (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)

STATE_STYLES = {
    JobState.SCHEDULED: "cyan",
    JobState.QUEUED: "blue",
    JobState.RUNNING: "yellow",
    JobState.SUCCEEDED: "green",
    JobState.FAILED: "red",
    JobState.CANCELLED: "magenta",
}


def _state_callback(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> JobState | None:
    if value is None:
        return None
    try:
        return parse_state(value)
    except InvalidArgument as exc:
        raise click.BadParameter(str(exc), ctx, param) from None


def state_text(state: JobState) -> Text:
    """A job state, coloured."""
    return Text(state.value, style=STATE_STYLES[state])


def pretty_json(value: Any) -> str:
    """Indented JSON for people to read."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


@click.group()
def jobs() -> None:
    """Inspect and steer jobs."""


# -- list ------------------------------------------------------------------------


#: Characters of a command line ``rota jobs list`` shows (its first line).
_COMMAND_WIDTH = 60


def jobs_table(found: Sequence[Job], now: float) -> Table:
    """One line per job: the columns of ``rota jobs list``. A multi-line
    command or error shows its first line, elided (``rota jobs show`` has
    the whole); a terminal too narrow cuts cells rather than wrapping them."""
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("id", no_wrap=True)
    for name in ("task", "queue", "state"):
        table.add_column(name, no_wrap=True, overflow="ellipsis")
    table.add_column("attempt", justify="right", no_wrap=True)
    table.add_column("enqueued", no_wrap=True)
    table.add_column("age", justify="right", no_wrap=True)
    table.add_column("error", no_wrap=True, overflow="ellipsis")
    for job in found:
        command = command_line_of(job.task, job.args)
        table.add_row(
            job.id,
            f"{job.task}: {summary(command, _COMMAND_WIDTH)}" if command else job.task,
            job.queue,
            state_text(job.state),
            attempt_text(job),
            fmt_time(job.enqueued_at),
            format_duration(now - job.enqueued_at),
            summary(None if job.state is JobState.SUCCEEDED else job.error),
        )
    return table


@jobs.command("list")
@click.option("--queue", "-q", callback=name_callback("queue"), help="Only jobs of this queue.")
@click.option("--task", "-t", callback=name_callback("task name"), help="Only jobs of this task.")
@click.option(
    "--state",
    "-s",
    callback=_state_callback,
    help="Only jobs in this state: " + ", ".join(s.value for s in JobState) + ".",
)
@click.option(
    "--schedule", callback=name_callback("schedule name"), help="Only jobs this schedule sent."
)
@click.option("--search", help="Only jobs whose arguments contain this text.")
@click.option(
    "--limit",
    "-n",
    type=click.IntRange(1, 1000),
    default=50,
    show_default=True,
    help="Jobs per page.",
)
@click.option("--cursor", help="Show the page after the one that printed this cursor.")
@url_option
@read_url_option
@pass_state
def list_jobs(
    cli: CliState,
    queue: str | None,
    task: str | None,
    state: JobState | None,
    schedule: str | None,
    search: str | None,
    limit: int,
    cursor: str | None,
) -> None:
    """List jobs, newest first, one page at a time.

    A store may look at only so many jobs per page (Redis: 20,000), so a rare
    match can be far down: pages that found nothing are read on for up to
    10 s, then the cursor to go on from is printed."""
    store = cli.store_app().reader
    query = JobQuery(queue=queue, task=task, state=state, schedule=schedule, search=search or None)
    page = store.list_jobs(query, limit=limit, cursor=cursor)
    deadline = time.monotonic() + _SCAN_BUDGET
    # An empty page with a cursor is not the end: the store scanned its share
    # of jobs and found no match in them; the next page scans on.
    while not page.jobs and page.next_cursor is not None and time.monotonic() < deadline:
        page = store.list_jobs(query, limit=limit, cursor=page.next_cursor)
    if not page.jobs:
        if page.next_cursor is not None:
            note(
                f"no match in the jobs scanned so far ({_SCAN_BUDGET:g} s); the scan goes on: "
                f"add --cursor {page.next_cursor} to the same command"
            )
        else:
            note("no jobs match" if cursor is None else "no more jobs")
        return
    console().print(jobs_table(page.jobs, store.now()))
    if page.next_cursor is not None:
        note(f"more: add --cursor {page.next_cursor} to the same command")


# -- show ------------------------------------------------------------------------


def _fields(job: Job, now: float) -> Text:
    rows: list[tuple[str, str | Text]] = [
        ("id", job.id),
        ("task", job.task),
        *([("command", command)] if (command := command_line_of(job.task, job.args)) else []),
        ("queue", job.queue),
        ("state", state_text(job.state)),
        ("priority", str(job.priority)),
        ("attempt", attempt_text(job)),
        ("retries", retry_text(job)),
        ("enqueued", fmt_when(job.enqueued_at, now)),
        ("run at", fmt_when(job.run_at, now)),
        ("started", fmt_when(job.started_at, now)),
        ("finished", fmt_when(job.finished_at, now)),
    ]
    if job.started_at is not None and job.finished_at is not None:
        rows.append(("took", f"{job.finished_at - job.started_at:.3f} s"))
    if job.worker is not None:
        rows.append(("worker", job.worker))
    if job.lease_expires is not None:
        rows.append(("lease expires", fmt_when(job.lease_expires, now)))
    rows.append(("limit keys", ", ".join(job.limit_keys) or "-"))
    rows.append(("unique key", job.unique_key or "-"))
    rows.append(("host", job.host or "any"))
    schedule = "-"
    if job.schedule is not None:
        schedule = f"{job.schedule} (fire time {fmt_time(job.fire_time)})"
    rows.append(("schedule", schedule))
    width = max(len(name) for name, _ in rows)
    lines = [Text.assemble((name.ljust(width), "bold"), "  ", value) for name, value in rows]
    return Text("\n").join(lines)


_EVENT_STYLES = {"succeeded": "green", "failed": "red"}


def _history(job: Job) -> Table:
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("attempt", "event", "at", "worker", "host", "detail"):
        table.add_column(column)
    for entry in job.history:
        event = str(entry.get("event", "?"))
        at = entry.get("at")
        error = entry.get("error")
        detail = summary(str(error)) if error is not None else ""
        if entry.get("by"):  # a cancel or a retry by hand: who asked
            detail = " ".join(filter(None, [detail, f"by {entry['by']}"]))
        table.add_row(
            str(entry.get("attempt", "-")),
            Text(event, style=_EVENT_STYLES.get(event, "yellow")),
            fmt_time(float(at)) if isinstance(at, int | float) else "-",
            str(entry.get("worker") or "-"),
            str(entry.get("host") or "-"),
            detail,
        )
    return table


def _section(title: str) -> Text:
    return Text(f"\n{title}", style="bold underline")


def job_details(job: Job, now: float, waiting: str | None = None) -> Group:
    """Everything about one job, as ``rota jobs show`` prints it; ``waiting``:
    why no worker may take it now, if that is so."""
    parts: list[Any] = [
        *([Text(f"warning: this job waits: {waiting}", style="bold yellow")] if waiting else []),
        _fields(job, now),
        _section("args"),
        pretty_json(job.args),
        _section("kwargs"),
        pretty_json(shown_kwargs(job.task, job.kwargs)),  # a command's env values: names only
    ]
    if job.state is JobState.SUCCEEDED or job.result is not None:
        parts += [_section("result"), pretty_json(job.result)]
    snoozed = snooze_reason(job)
    if snoozed:  # not an error; shown while the job waits
        if job.state in (JobState.SCHEDULED, JobState.QUEUED):
            parts += [_section("snoozed (not an attempt)"), Text(snoozed)]
    elif job.state is not JobState.SUCCEEDED:  # a success's earlier errors are in its history
        if job.error:
            parts += [_section("error"), Text(job.error, style="red")]
        if job.traceback:
            parts += [_section("traceback"), job.traceback.rstrip()]
    if job.history:
        parts += [_section("attempts"), _history(job)]
    return Group(*parts)


@jobs.command("show")
@click.argument("job_id", metavar="ID")
@url_option
@read_url_option
@pass_state
def show(cli: CliState, job_id: str) -> None:
    """Show everything about one job: arguments, result, error, traceback, history.

    ID may be a unique prefix (six or more characters) of the job's id."""
    store = cli.store_app().reader
    job = store.get_job(store.resolve_job_id(job_id))
    if job is None:  # deleted in between
        raise JobNotFound(job_id)
    waiting = None
    if job.state is JobState.QUEUED:
        waiting = job_problem(store, job)
    console().print(job_details(job, store.now(), waiting))


@jobs.command("logs")
@click.argument("job_id", metavar="ID")
@click.option("--attempt", type=click.IntRange(min=1), help="Only this attempt's output.")
@click.option(
    "--follow",
    "-f",
    is_flag=True,
    help="Keep printing new lines until the job ends; exit 1 if it ends failed or cancelled.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    help="With --follow: stop after this many seconds even if the job runs on (exit 1).",
)
@url_option
@read_url_option
@pass_state
def logs(
    cli: CliState, job_id: str, attempt: int | None, follow: bool, timeout: float | None
) -> None:
    """Print what a job wrote (its logger's lines, prints, a command's output),
    each attempt under a header; --follow prints new lines as they come and
    returns when the job has ended.

    A retry by hand counts the attempts from 1 again: the output of a run
    after it is headed "attempt 1, after requeue by NAME at TIME".

    ID may be a unique prefix (six or more characters) of the job's id.
    Exit codes: 0 once the output is printed (with --follow: once the job
    has succeeded); 1 with --follow when the job ended failed or cancelled,
    or when --timeout ran out while the job still runs."""
    if timeout is not None and not follow:
        raise click.UsageError("--timeout goes with --follow")
    store = cli.store_app().reader
    job_id = store.resolve_job_id(job_id)
    job = store.get_job(job_id)
    if attempt is not None and job is not None and attempt > _most_attempts(job):
        raise CliError(f"job {job_id} has had {_most_attempts(job)} attempt(s), not {attempt}")
    headings = LogHeadings(job.history if job is not None else [], fmt_time)
    # with --attempt, headers only where a requeue split its output in runs
    headed = attempt is None or headings.requeued
    deadline = None if timeout is None else time.monotonic() + timeout
    after = 0
    while True:
        job = store.get_job(job_id)
        chunks = page = store.job_logs(job_id, attempt=attempt, after=after)
        while len(page) == MAX_LOG_PAGE:  # a full page: read on, the log's cap bounds it
            page = store.job_logs(job_id, attempt=attempt, after=page[-1].seq)
            chunks = [*chunks, *page]
        for heading, chunk in headings.in_runs(chunks):
            if heading is not None and headed:
                click.echo(heading)
            click.echo(chunk.data, nl=False)
            after = max(after, chunk.seq)
        ended = job is None or job.state in FINISHED_STATES
        if not follow or (ended and not chunks):
            if after == 0:  # (on stderr: the output stays what the job wrote)
                click.echo(f"job {job_id} wrote nothing{'' if ended else ' yet'}", err=True)
            if follow:
                _follow_outcome(job_id, job)
            return
        if deadline is not None and time.monotonic() >= deadline:
            state = job.state.value if job is not None else "running"
            raise CliError(f"job {job_id} is still {state} after --timeout {timeout:g} s")
        sys.stdout.flush()
        time.sleep(_FOLLOW_POLL)


def _most_attempts(job: Job) -> int:
    """The highest attempt number the job has had, in its current run or in
    one before a retry by hand (which counts the attempts from 1 again)."""
    numbers = [h.get("attempt") for h in job.history]
    return max([job.attempt, *(n for n in numbers if isinstance(n, int))])


def _follow_outcome(job_id: str, job: Job | None) -> None:
    """The end of ``rota jobs logs --follow``: exit 1 when the job ended
    failed or cancelled, as ``rota send --wait`` does for a failure."""
    if job is None:
        return  # deleted while followed: no outcome to tell
    if job.state is JobState.FAILED:
        raise CliError(f"job {job_id} failed: {job.error or 'no error recorded'}")
    if job.state is JobState.CANCELLED:
        raise CliError(f"job {job_id} was cancelled")


# -- retry, cancel, delete ---------------------------------------------------------


@jobs.command("retry")
@click.argument("job_ids", metavar="[ID]...", nargs=-1)
@click.option("--failed", is_flag=True, help="Retry every failed job (of --queue / --task).")
@click.option(
    "--queue", "-q", callback=name_callback("queue"), help="With --failed: only jobs of this queue."
)
@click.option(
    "--task",
    "-t",
    callback=name_callback("task name"),
    help="With --failed: only jobs of this task.",
)
@url_option
@pass_state
def retry(
    cli: CliState, job_ids: tuple[str, ...], failed: bool, queue: str | None, task: str | None
) -> None:
    """Queue failed or cancelled jobs again, with fresh attempt counts.

    --failed retries the jobs failed when it starts (not those that fail
    again meanwhile), showing a count on stderr; on Ctrl-C the jobs retried
    so far stay queued (a store may work in parts) and are audited.

    Each ID may be a unique prefix (six or more characters) of a job's id."""
    if failed and job_ids:
        raise click.UsageError("give job ids or --failed, not both")
    if not failed and not job_ids:
        raise click.UsageError("give job ids to retry, or --failed")
    if not failed and (queue or task):
        raise click.UsageError("--queue and --task go with --failed")
    app = cli.store_app()
    if failed:
        total = None
        if task is None:
            total = sum(
                info.counts.get(JobState.FAILED, 0)
                for info in app.store.queues()
                if queue is None or info.name == queue
            )
        count = counted(
            "retrying",
            total,
            lambda show: app.admin.retry_failed(
                queue=queue, task=task, by=cli_actor(), progress=show
            ),
            "retried {done}{of} failed job(s) (audited); the rest stay failed",
        )
        click.echo(f"retried {count} failed job(s)")
        return
    ids, reasons = resolve(app.store, job_ids)
    step = batched(app.store, app.admin.retry_jobs, retry_refusal, "retry", "retried", reasons)
    steer(ids, step, "retried")


@jobs.command("cancel")
@click.argument("job_ids", metavar="ID...", nargs=-1, required=True)
@url_option
@pass_state
def cancel(cli: CliState, job_ids: tuple[str, ...]) -> None:
    """Cancel jobs: pending ones at once; running ones are asked to stop by
    their worker within about a second (a thread task stops when it checks
    current_job().cancelled).

    Each ID may be a unique prefix (six or more characters) of a job's id."""
    app = cli.store_app()
    actor = cli_actor()
    ids, reasons = resolve(app.store, job_ids)

    def step(chunk: list[str]) -> tuple[int, int]:
        applied = app.admin.cancel_jobs(chunk, by=actor)
        now = app.store.get_jobs(chunk)
        for job_id, ok, job in zip(chunk, applied, now, strict=True):
            if ok:
                running = still_running(job)
                click.echo(f"cancelled {job_id}" + (f" (it runs: {running})" if running else ""))
            else:
                refused("cancel", job_id, cancel_refusal(job_id, job), reasons)
        return sum(applied), len(applied) - sum(applied)

    steer(ids, step, "cancelled")


@jobs.command("delete")
@click.argument("job_ids", metavar="ID...", nargs=-1, required=True)
@url_option
@pass_state
def delete(cli: CliState, job_ids: tuple[str, ...]) -> None:
    """Delete jobs that are not running.

    Each ID may be a unique prefix (six or more characters) of a job's id."""
    app = cli.store_app()
    ids, reasons = resolve(app.store, job_ids)
    step = batched(app.store, app.admin.delete_jobs, delete_refusal, "delete", "deleted", reasons)
    steer(ids, step, "deleted")


# -- export ------------------------------------------------------------------------


@jobs.command("export")
@click.option("--queue", "-q", callback=name_callback("queue"), help="Only results of this queue.")
@click.option(
    "--task", "-t", callback=name_callback("task name"), help="Only results of this task."
)
@click.option(
    "--format",
    "-f",
    "fmt",
    type=click.Choice(["jsonl", "json", "csv"]),
    default="jsonl",
    show_default=True,
    help="JSON Lines (one object per job), a JSON array, or CSV (args, kwargs, result as "
    "JSON text).",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, writable=True, allow_dash=True),
    default="-",
    help="Write to this file instead of standard output (with a progress bar); "
    "an export that stops half-way (Ctrl-C, an error) removes it.",
)
@url_option
@read_url_option
@pass_state
def export(cli: CliState, queue: str | None, task: str | None, fmt: str, output: str) -> None:
    """Export the results of succeeded jobs, newest first.

    With -o, the file is opened before anything is read, and an export that
    does not finish (Ctrl-C, an error) removes the incomplete file and says
    so: a file that is there holds the whole export."""
    from rota.cli import _export

    if output == "-":
        store = cli.store_app().reader
        _export.write(fmt, store.iter_results(queue=queue, task=task), sys.stdout)
        return
    try:
        out = open(output, "w", encoding="utf-8", newline="")  # noqa: SIM115 (closed below)
    except OSError as exc:
        raise CliError(f"cannot write {output}: {exc.strerror or exc}") from None
    count = None
    try:
        with out:
            store = cli.store_app().reader
            total = _export.expected_total(store, queue, task)
            results = store.iter_results(queue=queue, task=task)
            count = _export.write_with_progress(fmt, results, out, total)
    except KeyboardInterrupt:
        _remove(output)
        note(f"interrupted: removed the incomplete {output}")
        sys.exit(130)
    finally:
        if count is None:
            _remove(output)
    note(f"exported {count} result(s) to {output}")


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)
