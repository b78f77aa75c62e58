"""The audit log verbs: append, page newest first with filters, purge by age."""

from __future__ import annotations

import dataclasses
from contextlib import closing
from typing import Any

import pytest

from rota import App
from rota.admin import NO_ROLE, NOT_LOGGED_IN, Actor
from rota.errors import InvalidArgument, SerializationError
from rota.models import AuditEntry
from rota.stores import Store


def entry(**changes: Any) -> AuditEntry:
    base = AuditEntry(
        at=0.0,
        actor="ann",
        role="operator",
        origin="cli",
        address=None,
        action="queue.pause",
        target="emails",
        details={},
    )
    return dataclasses.replace(base, **changes)


def everything(store: Store) -> list[AuditEntry]:
    return store.audit(limit=1000)[0]


def test_an_entry_comes_back_as_written_with_the_store_clock(store: Store) -> None:
    before = store.now()
    store.append_audit(
        entry(address="10.0.0.7", origin="api", details={"count": 3, "ids": ["a", "b"]})
    )
    after = store.now()
    [got] = everything(store)
    assert before - 1 <= got.at <= after + 1
    assert got == entry(
        at=got.at, address="10.0.0.7", origin="api", details={"count": 3, "ids": ["a", "b"]}
    )


def test_pages_are_newest_first_and_cover_every_entry_once(store: Store) -> None:
    base = store.now() - 100
    for i in range(7):
        store.append_audit(entry(at=base + i, target=f"q{i}"))
    store.append_audit(entry(at=base + 3, target="q3-again"))  # a tie on time: insertion order
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        page, cursor = store.audit(limit=3, cursor=cursor)
        pages += 1
        assert len(page) <= 3
        seen += [e.target for e in page]
        if cursor is None:
            break
    assert seen == ["q6", "q5", "q4", "q3-again", "q3", "q2", "q1", "q0"]
    assert pages == 3


def test_filters_by_actor_and_action(store: Store) -> None:
    store.append_audit(entry(actor="ann", action="queue.pause", target="a"))
    store.append_audit(entry(actor="bob", action="queue.pause", target="b"))
    store.append_audit(entry(actor="bob", action="job.retry", target="c"))
    assert [e.target for e in store.audit(actor="bob")[0]] == ["c", "b"]
    assert [e.target for e in store.audit(action="queue.pause")[0]] == ["b", "a"]
    assert [e.target for e in store.audit(actor="bob", action="job.retry")[0]] == ["c"]
    assert store.audit(actor="nobody") == ([], None)


def test_a_filtered_page_continues_past_entries_that_do_not_match(store: Store) -> None:
    for i in range(5):
        store.append_audit(entry(actor="ann", target=f"a{i}"))
        store.append_audit(entry(actor="bob", target=f"b{i}"))
    first, cursor = store.audit(limit=2, actor="bob")
    assert [e.target for e in first] == ["b4", "b3"]
    rest, end = store.audit(limit=10, actor="bob", cursor=cursor)
    assert [e.target for e in rest] == ["b2", "b1", "b0"] and end is None


def test_purge_removes_only_entries_older_than_the_age(store: Store) -> None:
    now = store.now()
    store.append_audit(entry(at=now - 5000, target="old"))
    store.append_audit(entry(at=now - 4000, target="older-than-an-hour"))
    store.append_audit(entry(target="fresh"))
    assert store.purge_audit(3600) == 2
    assert [e.target for e in everything(store)] == ["fresh"]
    assert store.purge_audit(3600) == 0


@pytest.mark.parametrize(
    "bad",
    [
        {"actor": ""},
        {"role": " admin"},
        {"origin": "x" * 300},
        {"action": "a\nb"},
        {"address": ""},
        {"target": 5},
        {"details": ["not", "a", "dict"]},
        {"at": float("nan")},
        {"at": -1.0},
        {"at": True},
    ],
)
def test_a_malformed_entry_is_refused_and_nothing_is_written(
    store: Store, bad: dict[str, Any]
) -> None:
    with pytest.raises(InvalidArgument):
        store.append_audit(entry(**bad))
    assert everything(store) == []


def test_details_that_are_not_json_are_refused(store: Store) -> None:
    with pytest.raises(SerializationError, match="details"):
        store.append_audit(entry(details={"when": {1, 2}}))
    assert everything(store) == []


@pytest.mark.parametrize(
    "query",
    [
        {"limit": 0},
        {"limit": 1001},
        {"limit": True},
        {"cursor": "garbage"},
        {"cursor": "nan:1"},
        {"cursor": "12.5:"},
        {"actor": ""},
        {"action": "x" * 201},
    ],
)
def test_bad_queries_are_refused(store: Store, query: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgument):
        store.audit(**query)


def test_bad_purge_ages_are_refused(store: Store) -> None:
    store.append_audit(entry(at=store.now() - 100))
    for age in (-1.0, float("nan"), float("inf")):
        with pytest.raises(InvalidArgument):
            store.purge_audit(age)
    assert len(everything(store)) == 1


# -- entries app.admin writes, as each store keeps them ------------------------


def test_a_failed_login_is_kept_as_no_actor_and_no_role_with_the_name_tried(url: str) -> None:
    with closing(App(url)) as app:
        app.admin.add_user("ola", "operator", "a long enough password")
        web = Actor("anonymous", "viewer", "web", "10.0.0.9")
        assert app.admin.authenticate("ola", "not the password", by=web) is None
        assert app.admin.authenticate("ghost", "a long enough password", by=web) is None
        failed, _ = app.store.audit(action="user.login_failed")
        assert [(e.actor, e.role, e.origin, e.address, e.target, e.details) for e in failed] == [
            (NOT_LOGGED_IN, NO_ROLE, "web", "10.0.0.9", name, {}) for name in ("ghost", "ola")
        ]
        # filtering by actor finds them apart from what users did
        assert [e.target for e in app.store.audit(actor=NOT_LOGGED_IN)[0]] == ["ghost", "ola"]
        assert app.store.audit(actor="ola") == ([], None)
        assert app.store.audit(actor="anonymous") == ([], None)


def test_a_send_to_a_host_is_audited_with_the_host(url: str) -> None:
    with closing(App(url)) as app:
        app.task(name="fetch")(lambda page: page)
        to_host = app.admin.send("fetch", [1], options={"host": "web-3"}, by=Actor("ann"))
        anywhere = app.admin.send("fetch", [2], by=Actor("ann"))
        sent, _ = app.store.audit(action="job.send")
        assert [(e.actor, e.target, e.details) for e in sent] == [
            ("ann", anywhere.id, {"task": "fetch", "duplicate": False, "delay": 0.0}),
            (
                "ann",
                to_host.id,
                {"task": "fetch", "duplicate": False, "delay": 0.0, "host": "web-3"},
            ),
        ]
        job = app.store.get_job(to_host.id)
        assert job is not None and job.host == "web-3"
