"""Every Redis key the store uses, built in one place.

All keys of a namespace start with the prefix ``{rota:NAMESPACE}:``. The
braces make ``rota:NAMESPACE`` the hash tag, so a whole namespace lives in one
Redis Cluster slot and every script may touch any of its keys. Scripts receive
the prefix as ``KEYS[1]`` and the fixed keys they use as further ``KEYS``;
keys that depend on a job, queue or limit key are derived inside the script
from the prefix by ``lua/_base.lua``, whose functions mirror :class:`Keys`
name for name (a test checks that they agree).

Key schema (``P`` is the prefix):

=============================  ======  ==============================================
key                            type    holds
=============================  ======  ==============================================
``P seq``                      string  job sequence counter (insertion order)
``P leases``                   zset    running job id -> lease expiry
``P queues``                   set     every queue that ever had a job or was paused
``P paused``                   set     paused queues
``P debug``                    set     queues in debug mode (pause at a failure)
``P debugjob``                 hash    queue -> the failed job that paused it in
                                       debug mode
``P vclock``                   hash    queue -> virtual time of its last claimed job
``P limkeys``                  set     every flow-control key seen
``P finished``                 zset    finished job id -> finished_at (retention)
``P workers``                  hash    worker id -> JSON heartbeat record
``P heartbeats``               zset    worker id -> last heartbeat time
``P schedules``                set     schedule names
``P schedver``                 string  counter bumped on every schedule change
``P totals``                   hash    all-time stats, fields as in ``stats:``
``P fairscan``                 hash    queue -> cursor of the retention pass over
                                       its ``fair:`` hash
``P limscan``                  string  cursor of the retention pass over ``limkeys``
``P hostscan``                 hash    queue -> cursor of the retention pass over
                                       its ``hosts:`` hash
``P audit``                    zset    audit entry id -> its time (order, retention)
``P auditlog``                 hash    audit entry id -> the entry as JSON
``P job:ID``                   hash    one job (fields written by ``lua/_jobs.lua``
                                       ``L.enqueue``; no id field: the key names
                                       the job)
``P state:STATE``              zset    job id -> seq, per state but queued (paging,
                                       counts; queued jobs: ``qstate`` only)
``P qstate:QUEUE:STATE``       zset    job id -> seq, per queue and state but queued
``P qpage:QUEUE:N``            zset    job id -> seq, the queue's queued jobs with
                                       seq // 128 == N (listpack-sized pages)
``P qpages:QUEUE``             zset    the queue's pages holding queued jobs, N -> N
``P qcount:QUEUE``             string  how many jobs the queue's pages hold
``P task:TASK``                zset    job id -> seq, per task, from when the job
                                       is first not queued (sent scheduled,
                                       claimed or cancelled)
``P sched:NAME``               zset    job id -> seq, jobs fired by a schedule
``P ready:QUEUE:PRIO:SIG``     zset    queued jobs of one limit signature (and host):
                                       ``%012x(seq) .. id`` -> fair virtual time
``P sigs:QUEUE:PRIO``          zset    listed signatures, ``%012x(head seq) .. SIG``
                                       -> the head's vtime (exact head order)
``P heads:QUEUE:PRIO``         hash    listed signature -> its member in ``sigs:``
``P prios:QUEUE``              zset    priorities with listed signatures -> priority
``P parked:QUEUE``             zset    blocked sub-queues ``PRIO:SIG`` -> when to
                                       look again
``P waiting:KEY``              zset    sub-queues parked on a busy key, JSON
                                       ``[queue, "PRIO:SIG"]`` -> parked at
``P paced:KEY``                zset    sub-queues parked for a rate key's tokens,
                                       as ``waiting:`` (``set_rate`` wakes them)
``P delayed:QUEUE``            zset    scheduled job id -> run_at
``P fair:QUEUE``               hash    fairness key -> virtual time of its newest job
``P hosts:QUEUE``              hash    host name -> last heartbeat of a worker of
                                       that host serving the queue (HostScope)
``P limit:KEY``                hash    one flow-control key's counters and bucket
``P unique:KEY``               string  job id holding a unique key (TTL once done)
``P signal:QUEUE``             list    wake-up tokens for ``wait`` (capped)
``P stats:MINUTE``             hash    per-minute counts, expire after two days
``P schedule:NAME``            hash    one schedule
``P req:ID``                   string  a batch's reply, for replay after a reconnect
``P idle:QUEUE``               zset    idle workers registered on a queue -> expiry
``P idler:WORKER``             string  JSON idle registration: free slots, token
                                       base, queues (expires with it)
``P inbox:WORKER``             list    JSON rows of jobs claimed for an idle worker
``P users``                    hash    user name -> JSON ``[role, password hash,
                                       created_at]``
``P tokens``                   hash    SHA-256 of an API token's secret -> JSON
                                       ``[user name, label]``
``P usertokens:NAME``          hash    one user's token labels -> their hashes
``P logs:ID:ATTEMPT``          list    one attempt's log chunks, JSON ``[seq, stream,
                                       at, data]`` (deleted with the job)
=============================  ======  ==============================================

Queued jobs wait in sub-queues per queue, priority and limit signature (SIG
is the SHA1 of the job's limits JSON, ``-`` for jobs without limits; for a
job sent to a host, ``h`` and the SHA1 of its limits and host, so a claim
skips other hosts' sub-queues whole without parking them). Splitting
by priority makes any integer priority order exactly; within a sub-queue the
score is the job's fair virtual time and the member's zero-padded sequence
prefix breaks ties in FIFO order. A claim merges the sub-queues by their
heads, so when a head is blocked by a flow-control key its whole sub-queue
(every job with the same keys) is skipped in one step, and parked: left out
of the signature set until its rate key has a token or its breaker cooled
down (a time), or until a slot of its busy key frees (finish, release and
recover wake the key's waiting sub-queues; a short hold bounds the wait).

A job's ``owner``, ``token`` and ``expires`` fields are empty strings while it
holds no lease.

A queued job costs its hash, its ready sub-queue entry and its entry in
its queue's paged index (``qpage:QUEUE:N``), nothing more: a backlog of a
million queued jobs would otherwise pay two more sorted-set entries each
(about 140 bytes and one skiplist update apiece). Lists of every queued job,
or of a task's queued jobs, merge the queues' paged indexes instead. The
pages keep the index listpack-encoded, about 41 bytes per job instead of
134 in one large sorted set. Earlier versions wrote queued jobs to
``qstate:QUEUE:queued``, ``state:queued`` and ``task:TASK``; those entries
are still read, removed as the jobs move on, and listed once.
"""

from __future__ import annotations

from collections.abc import Iterable

from rota.errors import InvalidArgument
from rota.models import JobState

#: The fixed keys scripts may name in their ``KEYS`` header.
STATIC = (
    "seq",
    "leases",
    "queues",
    "paused",
    "debug",
    "debugjob",
    "vclock",
    "limkeys",
    "finished",
    "workers",
    "heartbeats",
    "schedules",
    "schedver",
    "totals",
    "fairscan",
    "limscan",
    "hostscan",
    "audit",
    "auditlog",
    "users",
    "tokens",
)

#: The kinds of keys derived from the prefix: ``P KIND:...``.
KINDS = (
    "job",
    "state",
    "qstate",
    "qpage",
    "qpages",
    "qcount",
    "task",
    "sched",
    "ready",
    "sigs",
    "heads",
    "prios",
    "parked",
    "waiting",
    "paced",
    "delayed",
    "fair",
    "hosts",
    "limit",
    "unique",
    "signal",
    "stats",
    "schedule",
    "req",
    "idle",
    "idler",
    "inbox",
    "usertokens",
    "logs",
)

#: Sequence numbers per page of a queue's queued jobs (``L.QPAGE`` in ``lua/_base.lua``):
#: Redis keeps a sorted set of up to 128 entries listpack-encoded by default.
QUEUED_PAGE = 128

#: Minute stats live this long (seconds), like the SQLite store's retention of them.
STATS_TTL = 2 * 86400


def check_namespace(namespace: str) -> str:
    """``namespace``, if it can name keys: non-empty, printable, no space
    (key names in logs and ``redis-cli`` stay one word) and no brace (the
    namespace is the keys' hash tag); else :class:`InvalidArgument`."""
    if not namespace or not namespace.isprintable() or any(c in namespace for c in " {}"):
        raise InvalidArgument(
            f"namespace must be non-empty, printable and free of spaces and braces: {namespace!r}"
        )
    return namespace


def hash_tag(namespace: str) -> str:
    """The hash tag shared by every key of ``namespace``."""
    return f"{{rota:{namespace}}}"


class Keys:
    """Key names of one namespace."""

    def __init__(self, namespace: str) -> None:
        self.namespace = check_namespace(namespace)
        self.prefix = hash_tag(namespace) + ":"

    def static(self, name: str) -> str:
        """One of the fixed keys listed in :data:`STATIC`."""
        if name not in STATIC:
            raise KeyError(name)
        return self.prefix + name

    def job(self, job_id: str) -> str:
        """The hash of one job."""
        return f"{self.prefix}job:{job_id}"

    def state(self, state: JobState | str) -> str:
        """Jobs in one state, by sequence."""
        return f"{self.prefix}state:{JobState(state).value}"

    def qstate(self, queue: str, state: JobState | str) -> str:
        """Jobs of one queue in one state, by sequence."""
        return f"{self.prefix}qstate:{queue}:{JobState(state).value}"

    def qstates(self, queue: str, states: Iterable[JobState] = JobState) -> list[str]:
        """:meth:`qstate` for several states."""
        return [self.qstate(queue, s) for s in states]

    def qpage(self, queue: str, page: int) -> str:
        """One page of a queue's queued jobs: those with ``seq // QUEUED_PAGE == page``."""
        return f"{self.prefix}qpage:{queue}:{page}"

    def qpages(self, queue: str) -> str:
        """The pages of a queue's queued jobs that hold any."""
        return f"{self.prefix}qpages:{queue}"

    def qcount(self, queue: str) -> str:
        """How many jobs the pages of a queue's queued jobs hold."""
        return f"{self.prefix}qcount:{queue}"

    def task(self, task: str) -> str:
        """Jobs of one task, by sequence."""
        return f"{self.prefix}task:{task}"

    def sched(self, name: str) -> str:
        """Jobs fired by one schedule, by sequence."""
        return f"{self.prefix}sched:{name}"

    def ready(self, queue: str, priority: int, sig: str) -> str:
        """Queued jobs of one queue, priority and limit signature, by fair virtual time."""
        return f"{self.prefix}ready:{queue}:{priority}:{sig}"

    def sigs(self, queue: str, priority: int) -> str:
        """Listed limit signatures of one queue and priority, in head order."""
        return f"{self.prefix}sigs:{queue}:{priority}"

    def heads(self, queue: str, priority: int) -> str:
        """Each listed signature's current member in :meth:`sigs`."""
        return f"{self.prefix}heads:{queue}:{priority}"

    def prios(self, queue: str) -> str:
        """The priorities of a queue that have ready jobs."""
        return f"{self.prefix}prios:{queue}"

    def parked(self, queue: str) -> str:
        """Parked sub-queues of one queue, by when to look at them again."""
        return f"{self.prefix}parked:{queue}"

    def waiting(self, key: str) -> str:
        """Sub-queues parked until a slot of a flow-control key frees."""
        return f"{self.prefix}waiting:{key}"

    def paced(self, key: str) -> str:
        """Sub-queues parked for a rate key's tokens (``set_rate`` wakes them)."""
        return f"{self.prefix}paced:{key}"

    def delayed(self, queue: str) -> str:
        """Scheduled jobs of one queue, by run time."""
        return f"{self.prefix}delayed:{queue}"

    def fair(self, queue: str) -> str:
        """Fairness keys of one queue and the virtual time of their newest job."""
        return f"{self.prefix}fair:{queue}"

    def hosts(self, queue: str) -> str:
        """Hosts seen serving one queue and when a worker of each was last seen."""
        return f"{self.prefix}hosts:{queue}"

    def limit(self, key: str) -> str:
        """The state of one flow-control key."""
        return f"{self.prefix}limit:{key}"

    def unique(self, key: str) -> str:
        """The holder of one unique key."""
        return f"{self.prefix}unique:{key}"

    def signal(self, queue: str) -> str:
        """Wake-up tokens of one queue."""
        return f"{self.prefix}signal:{queue}"

    def stats(self, minute: int) -> str:
        """Counts of one minute (epoch seconds // 60)."""
        return f"{self.prefix}stats:{minute}"

    def schedule(self, name: str) -> str:
        """One schedule."""
        return f"{self.prefix}schedule:{name}"

    def req(self, request_id: str) -> str:
        """The remembered reply of one batch request."""
        return f"{self.prefix}req:{request_id}"

    def idle(self, queue: str) -> str:
        """Idle workers registered on one queue, by registration expiry."""
        return f"{self.prefix}idle:{queue}"

    def idler(self, worker_id: str) -> str:
        """One idle worker's registration."""
        return f"{self.prefix}idler:{worker_id}"

    def inbox(self, worker_id: str) -> str:
        """Jobs claimed for one idle worker, not yet taken."""
        return f"{self.prefix}inbox:{worker_id}"

    def logs(self, job_id: str, attempt: int) -> str:
        """The log chunks of one attempt of a job."""
        return f"{self.prefix}logs:{job_id}:{attempt}"

    def usertokens(self, name: str) -> str:
        """One user's API tokens: label -> hash of the secret."""
        return f"{self.prefix}usertokens:{name}"

    def pattern(self) -> str:
        """A SCAN pattern matching every key of the namespace (tests, admin; never hot)."""
        return f"{self.prefix}*"


__all__ = ["KINDS", "STATIC", "STATS_TTL", "Keys", "hash_tag"]
