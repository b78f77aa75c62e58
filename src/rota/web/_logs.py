"""The job log endpoint, ``GET /api/jobs/{id}/logs``: what a job wrote,
read after a sequence number so the job page can follow a running job."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel

from rota.models import JobState
from rota.stores.base import MAX_LOG_PAGE
from rota.web import _ops
from rota.web._api import _errors
from rota.web._deps import api_viewer, context

__all__ = ["router"]

router = APIRouter(
    prefix="/api", dependencies=[Depends(api_viewer)], responses=_errors(401, 403, 404, 409, 422)
)

_ENDED = (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)


class LogLine(BaseModel):
    """One chunk of a job's output: ``stream`` is log, stdout, stderr or rota
    (a note of rota's own, such as lines dropped over the size cap)."""

    seq: int
    attempt: int
    stream: str
    at: float
    data: str


class JobLogs(BaseModel):
    """A job's output after ``after``. Ask again with ``after`` = the answer's
    ``last`` while ``ended`` is false to follow it."""

    job_id: str
    chunks: list[LogLine]
    last: int
    ended: bool


@router.get("/jobs/{job_id}/logs", summary="What a job wrote, per attempt, after a sequence number")
def job_logs(
    request: Request,
    job_id: str,
    after: Annotated[int, Query(ge=0, le=2**63 - 1)] = 0,
    attempt: Annotated[int | None, Query(ge=1, le=2**31 - 1)] = None,
) -> JobLogs:
    """The job's log chunks (its logger's lines, prints, a command's output)
    with a sequence number above ``after``, by attempt; the id may be a unique
    prefix of six or more characters. At most 10,000 chunks per answer."""
    store = context(request).store
    job = _ops.get_job(store, job_id)
    chunks = store.job_logs(job.id, attempt=attempt, after=after, limit=MAX_LOG_PAGE)
    return JobLogs(
        job_id=job.id,
        chunks=[
            LogLine(seq=c.seq, attempt=c.attempt, stream=c.stream, at=c.at, data=c.data)
            for c in chunks
        ],
        last=max([after, *(c.seq for c in chunks)]),
        ended=job.state in _ENDED and len(chunks) < MAX_LOG_PAGE,
    )
