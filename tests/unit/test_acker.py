"""The worker's outcome reports: one outcome the store refuses as invalid
does not hold back the others, and its job still ends."""

from __future__ import annotations

from pathlib import Path

from rota import App
from rota.models import JobState, Outcome
from rota.worker.worker import Worker


def test_an_outcome_the_store_refuses_becomes_a_failure_and_the_batch_goes_through(
    tmp_path: Path,
) -> None:
    app = App(f"sqlite:///{tmp_path / 'rota.db'}")

    @app.task(name="echo", retries=2)
    def echo(value: int) -> int:
        return value

    sent = [echo.send(n) for n in range(3)]
    claimed = {job.id: job for job in app.store.claim("w", ["default"], 3)}
    bad, good, other = (claimed[h.id] for h in sent)
    worker = Worker(app)

    applied = worker._acker.report(
        [
            Outcome(bad.id, bad.token, False, error="boom", retry_in=float("nan")),
            Outcome(good.id, good.token, True, result=b"1"),
            Outcome(other.id, other.token, False, error="no", retry_in=None),
        ]
    )

    assert applied == [True, True, True]
    refused = sent[0].job()
    assert refused.state is JobState.FAILED
    assert refused.error is not None and "refused this attempt's outcome" in refused.error
    assert "retry_in" in refused.error
    assert sent[1].job().state is JobState.SUCCEEDED
    assert sent[2].job().state is JobState.FAILED
    assert worker.errors == 1
    app.close()
