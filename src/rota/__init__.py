"""rota: a distributed task scheduler for Python.

Send jobs, schedule them, spread them over workers on one machine or many,
limit how fast and how many run, and watch all of it live.
"""

import logging

from rota import errors
from rota.app import App, Registry
from rota.context import JobContext, current_job
from rota.errors import (
    CorruptJob,
    InvalidArgument,
    InvalidSchedule,
    JobCancelled,
    JobFailed,
    JobNotFound,
    JobTimeout,
    PayloadTooLarge,
    ResultTimeout,
    RotaError,
    SerializationError,
    Snooze,
    StoreError,
    StoreUnavailable,
    UnknownTask,
    ValueRefused,
)
from rota.limits import Breaker, Limit, Rate
from rota.models import Job, JobState
from rota.scheduling import at, cron, every
from rota.task import JobHandle, Task

__version__ = "0.1.0"

# A library logs; the application decides where it goes (`rota worker` and the
# other long-running commands configure logging themselves).
logging.getLogger("rota").addHandler(logging.NullHandler())

__all__ = [
    "App",
    "Breaker",
    "CorruptJob",
    "InvalidArgument",
    "InvalidSchedule",
    "Job",
    "JobCancelled",
    "JobContext",
    "JobFailed",
    "JobHandle",
    "JobNotFound",
    "JobState",
    "JobTimeout",
    "Limit",
    "PayloadTooLarge",
    "Rate",
    "Registry",
    "ResultTimeout",
    "RotaError",
    "SerializationError",
    "Snooze",
    "StoreError",
    "StoreUnavailable",
    "Task",
    "UnknownTask",
    "ValueRefused",
    "__version__",
    "at",
    "cron",
    "current_job",
    "errors",
    "every",
]
