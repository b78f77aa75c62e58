"""The dashboard shows who ran each attempt and how many threads a worker has stuck."""

from __future__ import annotations

import time

from starlette.testclient import TestClient

from rota.models import Outcome, WorkerInfo
from web.support import Demo


def _info(worker_id: str, host: str, stuck: int = 0) -> WorkerInfo:
    return WorkerInfo(
        id=worker_id,
        host=host,
        pid=7,
        queues=("default",),
        concurrency=2,
        mode="threads",
        running=0,
        started_at=time.time(),
        stuck=stuck,
    )


def test_job_page_history_names_worker_and_host(client: TestClient, demo: Demo) -> None:
    demo.store.heartbeat(_info("box-a-7-aaaaaa", "box-a"))
    handle = demo.add.send(1, 2)
    [job] = demo.store.claim("box-a-7-aaaaaa", ["default"], 1)
    assert demo.store.finish([Outcome(job.id, job.token, True, result=b"3")]) == [True]
    history = client.get(f"/jobs/{handle.id}").text.split('id="history"', 1)[1]
    row = history.split("<tbody>", 1)[1].split("</tr>", 1)[0]
    assert '<span class="state state-succeeded">succeeded</span>' in row
    assert '<td class="mono long">box-a-7-aaaaaa</td><td class="long">box-a</td>' in row


def test_workers_page_shows_stuck_threads(client: TestClient, demo: Demo) -> None:
    demo.store.heartbeat(_info("w-stuck", "box-b", stuck=2))
    demo.store.heartbeat(_info("w-fine", "box-c"))
    html = client.get("/workers").text
    stuck_row = html.split('data-worker="w-stuck"', 1)[1].split("</tr>", 1)[0]
    fine_row = html.split('data-worker="w-fine"', 1)[1].split("</tr>", 1)[0]
    assert '<span class="badge state-failed">2</span>' in stuck_row
    assert '<td class="num">0</td>' in fine_row and "badge state-failed" not in fine_row
    assert ">Stuck</th>" in html
