"""The worker: claims jobs it has room for, runs them, reports outcomes.

Claiming: the executor asks for jobs through the worker's one claim
function (:meth:`Worker._claim_turn`). In threads and async mode its idle
slots take turns calling it (leader and followers, see
``rota.worker.turns``), so a claimed job runs in the slot that claimed it;
in processes mode a thread of the executor claims for the children. A
claim asks for free slots only and waits (``claim_or_wait``: the store's
own waiting claim where it has one) when there is nothing to do. It may
also hold jobs waiting for a slot (``rota.worker.ahead``: by default as
many as its slots free within 10 ms while its jobs are short, none while
they are long; ``prefetch`` fixes the number): it claims again only once
none is left waiting, then for every free slot plus those, so a claim
brings several jobs where it would bring one; jobs still waiting at
shutdown are released at once. Supervised side threads:

- **acker** (``rota.worker.acker``): reports outcomes to the store in
  batches (whatever finished since the last report goes in one ``finish``
  call);
- **keeper**: renews the leases of running jobs and stops the ones the
  store says were cancelled, or gave back to their queue as their lease ran
  out in a stall or a partition (``rota.worker.leases``); sends the
  heartbeat with host load and the worker's own, reads its peers' loads (a
  worker busier than an idle peer waits a little before each claim: see
  ``rota.worker.load``), and gates claiming while the host is over its CPU
  or memory threshold;
- **reaper**: returns jobs whose lease expired (dead workers) and applies
  the retention policy;
- **scheduler** (optional): fires due schedules.

Shutdown order, on SIGTERM/SIGINT or :meth:`Worker.stop` (its store calls
all end by one deadline, :data:`STOP_MARGIN` seconds after the grace, or
after step 3 when stopping commands took longer: in a store outage, where
each call could retry for the store's ``retry_for``, what is not done by
then is left to the leases, said in one line, and the worker exits):

1. stop claiming;
2. wait up to ``grace`` seconds for running jobs to finish and be reported;
3. stop what still runs the others: commands' process groups (SIGTERM,
   SIGKILL their grace later), child processes (killed), async tasks
   (cancelled); a thread cannot be stopped: its task is asked to, as on a
   cancel (``cancelled`` reads True, ``on_cancel`` callbacks run), and is
   given :data:`THREAD_STOP_WAIT` to return; one that does not runs on until
   the process exits;
4. only then release those jobs back to the queue, without counting the
   attempt (so no other worker starts one while this one still runs it;
   their leases are renewed meanwhile);
5. flush the acker, stop the side threads, remove the heartbeat record;
6. run the app's ``on_worker_stop`` hooks (its ``on_worker_start`` hooks ran
   before the first claim).

A second signal exits at once; the leases of running jobs then expire and
another worker's reaper recovers them. A worker made with
``second_signal_exits=False`` (a pool's child) takes every signal as the
first: its supervisor escalates instead (a stop request may reach every
process of a service at once, as systemd's stop does, while the supervisor
forwards its own).
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from rota import _validate, commands
from rota._signals import StopSignals
from rota._store_wait import wait_for_store
from rota.context import cancel_running
from rota.errors import CommitInDoubt, InvalidArgument, JobCancelled, StoreUnavailable
from rota.models import DEFAULT_HOST_GRACE, ClaimedJob, HostScope, LeaseRef, WorkerInfo
from rota.stores.roles import claim_or_wait, stop_waiting
from rota.worker import joblog, joblogs, load, runner
from rota.worker.acker import Acker, Done
from rota.worker.ahead import ClaimAhead
from rota.worker.executors import MODES, make_executor
from rota.worker.flights import Flight, Flights, claim_of
from rota.worker.leases import LeaseKeeper
from rota.worker.runner import Result
from rota.worker.side import start_side

if TYPE_CHECKING:
    from rota.app import App

log = logging.getLogger("rota.worker")

_IDLE_WAIT = 1.0  # seconds one claim_or_wait call may block
_RETENTION_EVERY = 60.0
#: Jobs one retention pass removes at most (one store transaction); a pass
#: that removed that many is followed by another on the reaper's next turn.
_PURGE_BATCH = 10_000
#: Seconds a stopping worker's store calls may go on past its grace (or past
#: the stop of its commands, when that took longer): see the module docstring.
STOP_MARGIN = 3.0
#: Seconds a stopping worker waits for thread tasks it asked to stop (after the
#: grace) to return, within :data:`STOP_MARGIN`.
THREAD_STOP_WAIT = 1.0


class Worker:
    """A worker process's engine. ``Worker(app).run()`` blocks until stopped."""

    def __init__(
        self,
        app: App,
        *,
        queues: Sequence[str] = ("default",),
        concurrency: int = 8,
        mode: str = "threads",
        grace: float = 30.0,
        max_cpu: float | None = None,
        max_mem: float | None = None,
        scheduler: bool = False,
        heartbeat: float = 5.0,
        app_spec: str | None = None,
        prefetch: int | None = None,
        host: str | None = None,
        host_grace: float = DEFAULT_HOST_GRACE,
        second_signal_exits: bool = True,
    ) -> None:
        if concurrency < 1:
            raise InvalidArgument(f"concurrency must be at least 1, not {concurrency}")
        if prefetch is not None and prefetch < 0:
            raise InvalidArgument(f"prefetch must be 0 or more, not {prefetch}")
        if mode not in MODES:
            raise InvalidArgument(
                f"unknown worker mode {mode!r}; expected one of: {', '.join(MODES)}"
            )
        if not queues:
            raise InvalidArgument("a worker needs at least one queue")
        if host_grace <= heartbeat:
            raise InvalidArgument(
                f"the host grace ({host_grace:g} s) must be longer than the heartbeat "
                f"interval ({heartbeat:g} s): a live host would look gone between heartbeats"
            )
        self.app = app
        #: The host name this worker serves jobs sent to (``task.options(host=...)``).
        self.host = socket.gethostname() if host is None else _validate.name(host, "host")
        self.host_scope = HostScope(self.host, host_grace)
        self.queues = tuple(queues)
        self.concurrency = concurrency
        self.mode = mode
        #: Jobs the worker may hold beyond its slots, waiting for one: ``prefetch``
        #: when given, else one per slot while its jobs are short (``rota.worker.ahead``).
        self._ahead = ClaimAhead(concurrency, prefetch)
        self.grace = grace
        #: Claims wait while the machine is over ``max_cpu`` or ``max_mem`` (percent).
        self._gate = load.HostGate(max_cpu, max_mem)
        self.heartbeat_every = heartbeat
        self.with_scheduler = scheduler
        self.id = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.started_at = time.time()
        self.processed = 0
        self.failed = 0
        #: Unexpected errors the worker's threads and child processes survived.
        self.errors = 0
        self._load_meter = load.LoadMeter()
        self._load = 0.0
        self._idlest_peer: float | None = None  # see rota.worker.load
        self._yielding = False  # an idler peer claims before this worker
        #: Whether the latest claim brought fewer jobs than it asked for (none yet:
        #: False, so that peers do not wait for a worker still starting).
        self._claimed_short = False
        self._claim_failures = 0  # claims failed in a row: an outage is logged once
        #: The attempts claimed, from the claim until the store took their outcome.
        self._flights = Flights()
        self._lock = self._flights.lock  # (also guards the counts of the heartbeat)
        #: Set when a slot frees while no claimed job waits for one (a claim
        #: may follow), at shutdown, and when a held job is dropped.
        self._slot_freed = threading.Event()
        #: Set once no claimed job is left in flight: ends the acker's linger.
        self._none_in_flight = threading.Event()
        self._stopping = threading.Event()
        self._done = threading.Event()
        #: Wakes the keeper early: a job started whose timeout falls due before
        #: its next round (``_keeper_due``, monotonic), or the worker is done.
        self._keeper_wake = threading.Event()
        self._keeper_due = math.inf
        self._acker = Acker(
            app,
            reported=self._reported,
            in_flight=lambda: bool(self._flights.inflight),
            none_in_flight=self._none_in_flight,
            refused=self._count_error,
        )
        # (a pool's child takes a second signal as the first: its supervisor escalates)
        self._signals = StopSignals(on_repeat=self._exit_now if second_signal_exits else None)
        self._executor = make_executor(mode, app, concurrency, self._on_done, app_spec)
        self._executor.may_start = self._may_start
        self._executor.short_jobs = self._ahead.short
        self._leases = LeaseKeeper(
            app, self._flights, self._executor, mode=mode, on_done=self._on_done
        )
        self._side: list[threading.Thread] = []
        #: When a stopping worker gives up on the store (monotonic; see STOP_MARGIN).
        self._stop_by = math.inf
        #: What a stopping worker left undone, and the store's latest error then.
        self._undone: list[str] = []
        self._stop_error = ""

    # -- public --------------------------------------------------------------

    def run(self) -> None:
        """Work until stopped by a signal or :meth:`stop`; then shut down in order."""
        if threading.current_thread() is threading.main_thread():
            self._signals.install()
        if not wait_for_store(self.app, self._signals, self._stopping.is_set):
            log.info("worker %s stopped before its store answered", self.id)
            return
        self.app._worker_started()  # the app's on_worker_start hooks, before any claim
        joblogs.install()
        self._send_heartbeat()  # before the keeper's, which must not be overwritten
        self._executor.start(self._claim_turn)
        self._start_side(self._acker.run, "rota-acker")
        self._start_side(self._keeper_loop, "rota-keeper")
        self._start_side(self._reaper_loop, "rota-reaper")
        if self.with_scheduler:
            self._start_scheduler()
        log.info(
            "worker %s started: queues=%s concurrency=%d mode=%s",
            self.id,
            ",".join(self.queues),
            self.concurrency,
            self.mode,
        )
        try:
            # Wait in steps: a signal the OS gives to another thread runs its
            # Python handler only once this thread runs again.
            while not self._stopping.is_set():
                signum = self._signals.wait(0.5)
                if signum is not None and not self._stopping.is_set():
                    log.info("signal %d: finishing running jobs (grace %g s)", signum, self.grace)
                    self.stop()
        finally:
            self._shutdown()
            self.app._worker_stopped()
            log.info("worker %s stopped", self.id)

    def stop(self) -> None:
        """Ask the worker to shut down gracefully (thread-safe)."""
        self._stopping.set()
        self._slot_freed.set()
        self._signals.wake()

    @property
    def holding_back(self) -> bool:
        """Whether claims wait while the machine is over its CPU or memory threshold."""
        return self._gate.closed

    @property
    def running(self) -> int:
        """Jobs being run right now."""
        return len(self._flights.inflight)

    # -- claiming ----------------------------------------------------------------

    def _claim_turn(self) -> list[ClaimedJob] | None:
        """One turn of claiming for the executor's free slots: the jobs, [] to
        be asked again, None once the worker stops claiming."""
        if self._stopping.is_set():
            return None
        if self.holding_back:
            self._stopping.wait(1.0)
            return []
        held = max(len(self._flights.inflight), self._executor.busy())
        ahead = self._ahead.jobs()
        if held >= self.concurrency and (held > self.concurrency or not ahead):
            self._slot_freed.wait(1.0)  # every slot busy, and jobs wait for them
            self._slot_freed.clear()
            return []
        delay = load.claim_delay(self._load, self._idlest_peer, held, self.app.store.wake_latency)
        if delay and self._stopping.wait(delay):  # an idler peer claims first
            return None
        return self._claim(self.concurrency + ahead - held, yielding=bool(delay))

    def _claim(self, free: int, yielding: bool = False) -> list[ClaimedJob]:
        """Claim up to ``free`` jobs, waiting up to a second for some when there
        are none; they count as running from here on. A ``yielding`` worker
        (an idler peer claims first) claims without registering as idle, and
        finding nothing it waits for work to appear and returns none: it
        claims on its next turn, after its delay."""
        store = self.app.store
        try:
            if yielding and not self._yielding:
                stop_waiting(store, self.id)  # new jobs go to the idler peer, not to us
            self._yielding = yielding
            if yielding:
                jobs = store.claim(self.id, self.queues, free, self.host_scope)
                if not jobs:
                    store.wait(self.queues, _IDLE_WAIT)
            else:
                jobs = claim_or_wait(store, self.id, self.queues, free, _IDLE_WAIT, self.host_scope)
        except CommitInDoubt as exc:  # a store server's crash: expected, and retried
            log.warning("claim failed; retrying shortly: %s", exc)
            self._stopping.wait(1.0)
            return []
        except Exception as exc:
            self._claim_failures += 1
            if self._claim_failures == 1 and isinstance(exc, StoreUnavailable):
                log.warning(
                    "claim failed; retrying every second: %s", exc
                )  # told once, and its end
            elif self._claim_failures == 1:
                log.exception("claim failed; retrying every second")
            self._stopping.wait(1.0)
            return []
        if self._claim_failures:
            log.warning("claims work again, after %d failed", self._claim_failures)
            self._claim_failures = 0
        self._claimed_short = len(jobs) < free
        if jobs and self.holding_back:  # claimed for us as the gate closed: not ours to run
            self.app.store.release([LeaseRef(j.id, j.token) for j in jobs])
            return []
        now = time.monotonic()
        with self._lock:
            for job in jobs:
                self._flights.inflight[claim_of(job)] = Flight(job, now, now)
            if jobs:
                self._none_in_flight.clear()
        return jobs

    def _may_start(self, job: ClaimedJob) -> bool:
        """False for a job whose lease ran out before a slot took it up (this
        process was stalled for longer than the lease, e.g. suspended), or
        that a renewal found lost: the store has handed it out again, so it
        is dropped unrun. False too for a job cancelled while it waited for a
        slot: it ends cancelled without running."""
        with self._lock:
            flight = self._flights.inflight.get(claim_of(job))
            if flight is None:
                return False  # released at shutdown
            now = time.monotonic()
            lost = flight.lost or now - flight.renewed >= job.lease
            if not lost and not flight.cancelled:
                flight.started = now
                due = now + job.timeout if job.timeout is not None else math.inf
                if self.mode == "threads" and due < self._keeper_due:
                    self._keeper_wake.set()  # to report the timeout when due
                return True
            if lost:
                del self._flights.inflight[claim_of(job)]
        if not lost:  # cancelled: reported so (the slot is counted free there)
            self._on_done(job, runner.failure(JobCancelled(job.id), retryable=False))
            return False
        log.warning(
            "job %s not started: its lease was lost while it waited for a slot "
            "(this process was stalled or cut off); the store hands it out again",
            job.id,
        )
        self._slot_freed.set()
        return False

    def _on_done(self, job: ClaimedJob, result: Result) -> None:
        """Report an attempt's result; never raises, so the executor's thread
        that calls it lives on."""
        with self._lock:
            self.errors += result.internal
            flight = self._flights.inflight.pop(claim_of(job), None)
            if flight is None:  # already reported (timed out), or being released at shutdown
                leftover = self._flights.releasing.get(claim_of(job))
                if leftover is not None:
                    leftover.returned = True
                    self._slot_freed.set()
                return
            self._flights.reporting[claim_of(job)] = flight
            seconds = time.monotonic() - (flight.started or flight.claimed)
            if flight.started is not None:  # (one cancelled unrun says nothing of run times)
                self._ahead.done(seconds)
            if not self._flights.inflight:
                self._none_in_flight.set()
            # a claim waits only while jobs wait for a slot (see _claim_turn)
            freed = max(len(self._flights.inflight), self._executor.busy()) <= self.concurrency
        try:
            if not result.ok:  # (a success needs no look)
                result = runner.awaiting_task(job, result)
            outcome = runner.to_outcome(job, result)
        except Exception as exc:
            failed = runner.internal_failure(exc, "the worker's reporting")
            outcome = runner.to_outcome(job, failed)
            self._count_error()
        self._acker.put(Done(job, outcome, seconds, flight.cancelled))
        if freed:
            self._slot_freed.set()

    def _count_error(self) -> None:
        """An unexpected error the worker survived (logged where it happened)."""
        with self._lock:
            self.errors += 1

    # -- side threads ----------------------------------------------------------

    def _start_side(self, target: Callable[[], None], name: str) -> None:
        self._side.append(start_side(target, name, self._done))

    def _reported(self, reported: list[Done], applied: list[bool]) -> None:
        """The acker reported ``reported``: count the attempts the store took and
        log a line for each (the line says what is stored: it comes once the
        store has taken the outcome)."""
        with self._lock:
            for done in reported:
                self._flights.reporting.pop(claim_of(done.job), None)
        with joblog.batch():
            for done, ok in zip(reported, applied, strict=True):
                outcome = done.outcome
                if ok:
                    joblog.report(done.job, outcome, done.seconds, cancelled=done.cancelled)
                if not ok:
                    log.warning(
                        "result of job %s refused: its lease had expired and the job moved on",
                        outcome.job_id,
                    )
                elif outcome.ok:
                    self.processed += 1
                elif not outcome.snooze:  # a snooze is no attempt
                    self.failed += 1

    def _keeper_loop(self) -> None:
        """Renew leases and measure the load every :meth:`LeaseKeeper.interval`,
        beat, and in threads mode report each running job's timeout when it
        falls due (waking for it)."""
        last_beat, renewed, stuck = 0.0, float("-inf"), 0
        while not self._done.is_set():
            now = time.monotonic()
            every = self._leases.interval(self.heartbeat_every)
            if now - renewed >= every:
                self._leases.renew()
                self._measure_load()
                renewed = now
            next_timeout = self._leases.expire_soft_timeouts(now)
            if now - last_beat >= self.heartbeat_every or self._executor.stuck() != stuck:
                stuck = self._executor.stuck()
                self._send_heartbeat()
                last_beat = now
            self._keeper_due = min(renewed + every, next_timeout)
            self._keeper_wake.wait(max(0.005, self._keeper_due - time.monotonic()))
            self._keeper_wake.clear()

    def _measure_load(self) -> None:
        self._load = self._load_meter.read()
        if self._gate.read():
            stop_waiting(self.app.store, self.id)  # new jobs must not be claimed for us

    def _send_heartbeat(self) -> None:
        self.app.store.heartbeat(
            WorkerInfo(
                id=self.id,
                host=self.host,
                pid=os.getpid(),
                queues=self.queues,
                concurrency=self.concurrency,
                mode=self.mode,
                running=len(self._flights.inflight),
                started_at=self.started_at,
                cpu_percent=self._gate.cpu,
                mem_percent=self._gate.mem,
                holding_back=self.holding_back,
                stopping=self._stopping.is_set(),
                processed=self.processed,
                failed=self.failed,
                errors=self.errors,
                stuck=self._executor.stuck(),
                load=self._load,
                claimed_short=self._claimed_short,
            )
        )
        self._idlest_peer = load.idlest_peer_load(
            self.id, self.queues, self.app.store.workers(), 3 * self.heartbeat_every
        )

    def _reaper_loop(self) -> None:
        store = self.app.store
        last_retention = 0.0
        interval = max(0.2, min(5.0, self.app.lease / 4.0))
        while not self._done.wait(interval):
            recovered = store.recover()
            if recovered:
                log.warning(
                    "recovered %d job(s) whose worker stopped renewing its lease", len(recovered)
                )
            if time.monotonic() - last_retention > _RETENTION_EVERY:
                purged = store.purge_finished(self.app.retention, _PURGE_BATCH)
                store.purge_audit(self.app.audit_retention)
                # a full batch leaves more to purge: on the next turn, in seconds
                last_retention = -math.inf if purged >= _PURGE_BATCH else time.monotonic()

    def _start_scheduler(self) -> None:
        from rota.scheduling.scheduler import Scheduler

        scheduler = Scheduler(self.app)
        self._start_side(lambda: scheduler.run(self._done), "rota-scheduler")

    # -- shutdown ----------------------------------------------------------------

    def _exit_now(self, count: int) -> None:
        # A second signal, in its handler (see rota._signals; the first one
        # stops the worker from run's loop). The line may fail where the
        # signal caught this thread writing to the same stream; the exit
        # happens anyway.
        try:
            log.warning("second signal: exiting now; leases of running jobs will expire")
        finally:
            os._exit(1)

    def _shutdown(self) -> None:
        deadline = time.monotonic() + self.grace
        self._stop_by = deadline + STOP_MARGIN
        self._by_deadline(self.app.store.interrupt_waits)  # a claim waiting for work returns now
        self._executor.stop_claiming(self._stop_by - time.monotonic())
        self._release(self._executor.take_waiting(), "prefetched job(s) not started")
        self._by_deadline(self._send_heartbeat)
        while self._flights.inflight and time.monotonic() < deadline:
            self._slot_freed.wait(min(0.1, max(0.0, deadline - time.monotonic())))
            self._slot_freed.clear()
        with self._lock:  # from here their results are void: they go back to the queue
            self._flights.releasing, self._flights.inflight = self._flights.inflight, {}
        leftover = [f.job for f in self._flights.releasing.values()]
        # Stop what runs them before they are released: a job released first
        # could start on another worker while this one still runs it.
        stopping = time.monotonic()
        for flight in self._flights.releasing.values():  # a thread task is asked, as on a cancel
            cancel_running(flight.job.token)
        commands.terminate_all()  # (the commands of thread and async slots)
        self._executor.stop()
        # a thread task asked to stop gets a moment to return before its job
        # is released (the process exits after the release, ending the thread)
        waits = THREAD_STOP_WAIT if self.mode == "threads" else 0.0
        asked_until = min(time.monotonic() + waits, self._stop_by)
        while time.monotonic() < asked_until and not all(
            f.returned for f in self._flights.releasing.values()
        ):
            self._slot_freed.wait(min(0.05, max(0.0, asked_until - time.monotonic())))
            self._slot_freed.clear()
        # the store calls' margin counts from here when stopping commands took long
        self._stop_by = max(self._stop_by, deadline + time.monotonic() - stopping + STOP_MARGIN)
        self._release(leftover, "unfinished job(s)")
        self._flights.releasing = {}
        self._acker.close()
        for thread in self._side:
            if thread.name == "rota-acker":
                thread.join(max(0.0, self._stop_by - time.monotonic()))
        if self._flights.reporting:
            self._undone.append(
                f"{len(self._flights.reporting)} finished job(s) not reported (they run again "
                "once their leases run out)"
            )
        self._done.set()
        self._keeper_wake.set()
        for thread in self._side:
            thread.join(max(0.0, self._stop_by - time.monotonic()))
        if not self._by_deadline(lambda: self.app.store.remove_worker(self.id)):
            self._undone.append("the worker's record not removed (it shows as lost)")
        if self._undone:
            log.warning(
                "stopped without the store (%s): %s",
                self._stop_error or "no answer in time",
                "; ".join(self._undone),
            )

    def _by_deadline(self, call: Callable[[], object]) -> bool:
        """Make the store call ``call`` of a stopping worker, waiting for it up
        to the stop's deadline (:data:`STOP_MARGIN`); True if it was made.
        One still under way then is left to end in the background."""
        left = self._stop_by - time.monotonic()
        if left <= 0:
            return False
        made: list[bool] = []

        def run() -> None:
            try:
                call()
                made.append(True)
            except Exception as exc:
                self._stop_error = str(exc)
                log.debug("a store call of the stopping worker failed", exc_info=True)

        thread = threading.Thread(target=run, name="rota-stop", daemon=True)
        thread.start()
        thread.join(left)
        return bool(made)

    def _release(self, jobs: list[ClaimedJob], what: str) -> None:
        """Give ``jobs`` back to the queue unrun, without counting an attempt
        (their late results are refused by token fencing)."""
        with self._lock:
            for job in jobs:
                self._flights.inflight.pop(claim_of(job), None)
        if not jobs:
            return
        if self._by_deadline(
            lambda: self.app.store.release([LeaseRef(j.id, j.token) for j in jobs])
        ):
            log.warning("released %d %s back to the queue", len(jobs), what)
        else:
            self._undone.append(f"{len(jobs)} {what} not released (their leases return them)")
