"""Actions through the API and the pages are audited with their origin and address."""

from __future__ import annotations

import html
import json
import re

from starlette.testclient import TestClient

from web.support import Demo


def test_an_api_action_is_audited_with_origin_api_and_the_client_address(
    client: TestClient, demo: Demo
) -> None:
    assert client.post("/api/queues/crawl/pause").status_code == 200
    [entry] = demo.store.audit()[0]
    assert (entry.origin, entry.address, entry.role) == ("api", "127.0.0.1", "operator")
    assert entry.actor == "local"  # no login: anyone on this machine, not a token
    assert (entry.action, entry.target) == ("queue.pause", "crawl")
    body = client.get("/api/audit").json()
    assert body["next_cursor"] is None
    assert [(e["action"], e["origin"], e["address"]) for e in body["entries"]] == [
        ("queue.pause", "api", "127.0.0.1")
    ]


def test_the_audit_api_pages_and_filters(client: TestClient, demo: Demo) -> None:
    for name in ("a", "b", "c"):
        assert client.post(f"/api/queues/{name}/pause").status_code == 200
    assert client.put("/api/limits/spiders", json={"concurrency": 2}).status_code == 200
    first = client.get("/api/audit", params={"limit": 2, "action": "queue.pause"}).json()
    assert [e["target"] for e in first["entries"]] == ["c", "b"]
    rest = client.get(
        "/api/audit", params={"limit": 2, "action": "queue.pause", "cursor": first["next_cursor"]}
    ).json()
    assert [e["target"] for e in rest["entries"]] == ["a"] and rest["next_cursor"] is None
    bad = client.get("/api/audit", params={"cursor": "nonsense"})
    assert bad.status_code == 400 and bad.json()["error"] == "invalid_argument"


def test_queue_mode_through_the_api_is_validated(client: TestClient, demo: Demo) -> None:
    bad = client.post("/api/queues/crawl/mode", json={"mode": "sleepy"})
    assert bad.status_code == 422
    assert demo.store.audit()[0] == []


def test_the_audit_page_shows_who_did_what(client: TestClient, demo: Demo) -> None:
    assert client.post("/api/limits/spiders/reset").status_code in (200, 404)
    assert client.put("/api/limits/spiders", json={"concurrency": 5}).status_code == 200
    page = client.get("/audit")
    assert page.status_code == 200
    assert "limit.set" in page.text and "spiders" in page.text and "127.0.0.1" in page.text
    assert 'href="/audit"' in page.text


def test_the_audit_page_shows_details_as_plain_json(client: TestClient, demo: Demo) -> None:
    sent = client.post("/api/jobs", json={"task": "rota.cmd", "args": [["echo", "it's", "<b>&"]]})
    assert sent.status_code == 201, sent.text
    page = client.get("/audit").text
    row = page.split('data-action="job.send"', 1)[1].split("</tr>", 1)[0]
    cells = re.findall(r'<td class="mono[a-z ]*">([^<]*)</td>', row)
    line = """echo 'it'"'"'s' '<b>&'"""  # the command line, quoted as a shell reads it
    assert html.unescape(cells[-1]) == (
        f'command={json.dumps(line)} delay=0.0 duplicate=false task="rota.cmd"'
    )
    assert "\\u0027" not in page and "\\u003c" not in page
    assert "&lt;b&gt;&amp;" in cells[-1], "escaped for HTML by the page, once"


def test_a_job_sent_to_a_host_through_the_api_is_audited_with_the_host(
    client: TestClient, demo: Demo
) -> None:
    sent = client.post(
        "/api/jobs", json={"task": "rota.cmd", "args": [["true"]], "options": {"host": "web-3"}}
    )
    assert sent.status_code == 201, sent.text
    [entry] = demo.store.audit(action="job.send")[0]
    assert (entry.target, entry.details["host"]) == (sent.json()["job_id"], "web-3")
    page = client.get("/audit").text
    row = page.split('data-action="job.send"', 1)[1].split("</tr>", 1)[0]
    assert 'host="web-3"' in html.unescape(row)
