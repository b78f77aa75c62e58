"""The crawl's seen-set on a real Redis (a fresh namespace per test) and a
real SQLite store's file: adding and asking in batches, two processes adding
the same URLs at once (each URL new to exactly one of them), and the
false-positive rate measured against the configured one."""

from __future__ import annotations

import multiprocessing
import random
from collections.abc import Iterator
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest

from backends import drop_store, store_url
from rota.crawl import SeenSet
from rota.crawl.seen import SeenBackend
from rota.errors import InvalidArgument

BATCH = 1_000


@pytest.fixture(params=["sqlite", "redis"])
def seen_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    url = store_url(str(request.param), tmp_path)
    yield url
    drop_store(str(request.param), url)


def urls(prefix: str, n: int) -> list[str]:
    return [f"https://{prefix}.example.com/page/{i}?q={i * 7}" for i in range(n)]


def add_all(backend: SeenBackend, items: list[str]) -> list[bool]:
    out: list[bool] = []
    for start in range(0, len(items), BATCH):
        out += backend.add(items[start : start + BATCH])
    return out


def test_add_and_contains_in_batches(seen_url: str) -> None:
    backend = SeenSet(capacity=1_000, error_rate=0.01).open(seen_url, "site")
    try:
        assert backend.add([]) == [] and backend.contains([]) == []
        a, b, c = "https://a.test/", "https://b.test/x", "https://c.test/y"
        assert backend.contains([a, b]) == [False, False]
        assert backend.add([a, b, a]) == [True, True, False], "a repeat in one batch is not new"
        assert backend.add([b, c]) == [False, True]
        assert backend.contains([a, b, c, "https://d.test/"]) == [True, True, True, False]
        # another process's view (a fresh open) is the same set
        again = SeenSet(capacity=1_000, error_rate=0.01).open(seen_url, "site")
        assert again.contains([a, c]) == [True, True]
        assert again.add([c]) == [False]
        again.close()
        # another crawler's set is apart
        other = SeenSet(capacity=1_000, error_rate=0.01).open(seen_url, "other")
        assert other.contains([a]) == [False]
        other.close()
    finally:
        backend.close()


def _adder(url: str, items: list[str], step: Barrier, out: Connection) -> None:
    """Add ``items`` a batch at a time, each batch once the other adder is
    ready for its own: neither runs ahead of the other by more than a batch,
    however the system schedules the two processes (one that ran all its
    batches first would find every URL new, and the race would not be run)."""
    backend = SeenSet(capacity=100_000, error_rate=0.001).open(url, "site")
    added: list[bool] = []
    for start in range(0, len(items), BATCH):
        step.wait(10)
        added += backend.add(items[start : start + BATCH])
    out.send([item for item, new in zip(items, added, strict=True) if new])
    backend.close()


def test_two_processes_adding_the_same_urls_see_each_new_exactly_once(seen_url: str) -> None:
    items = urls("race", 20_000)
    ctx = multiprocessing.get_context("fork")
    step = ctx.Barrier(2)
    pipes, procs = [], []
    try:
        for seed in (1, 2):
            order = items[:]
            random.Random(seed).shuffle(order)
            mine, theirs = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_adder, args=(seen_url, order, step, theirs))
            proc.start()
            pipes.append(mine)
            procs.append(proc)
        news = []
        for pipe in pipes:
            assert pipe.poll(60), "an adder did not answer within 60 s"
            news.append(pipe.recv())
    finally:
        for proc in procs:
            proc.join(10)
            if proc.is_alive():
                proc.kill()
                proc.join()
    first, second = news
    assert len(first) + len(second) == len(items)
    assert sorted(first + second) == sorted(items)
    assert first and second, "both processes added some URLs first"


def test_the_false_positive_rate_is_the_configured_one(seen_url: str) -> None:
    backend = SeenSet(capacity=100_000, error_rate=0.01).open(seen_url, "site")
    try:
        assert sum(add_all(backend, urls("in", 100_000))) > 99_000, "nearly every URL new"
        never = urls("out", 100_000)
        hits = sum(sum(backend.contains(never[i : i + BATCH])) for i in range(0, len(never), BATCH))
    finally:
        backend.close()
    assert 0.008 <= hits / len(never) <= 0.012, f"false-positive rate {hits / len(never):.4f}"


def test_a_seen_set_file_of_another_size_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'rota.db'}"
    SeenSet(capacity=1_000).open(url, "site").close()
    with pytest.raises(InvalidArgument, match="delete the file to start a fresh seen-set"):
        SeenSet(capacity=2_000).open(url, "site")
    (tmp_path / "junk-seen-site").write_bytes(b"not a filter at all, just bytes here....")
    with pytest.raises(InvalidArgument, match="is not a rota seen-set file"):
        SeenSet(capacity=1_000).open(f"sqlite:///{tmp_path / 'junk'}", "site")
