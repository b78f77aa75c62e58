"""The crawler's HTTP clients: one per thread, kept between its fetches,
all closed by the worker's stop hook."""

from __future__ import annotations

import threading

import httpx

from rota.crawl.fetching import Clients


def _in_thread(clients: Clients) -> httpx.Client:
    got: list[httpx.Client] = []
    thread = threading.Thread(target=lambda: got.append(clients.get()))
    thread.start()
    thread.join(10)
    return got[0]


def test_a_thread_keeps_its_client_and_another_thread_has_its_own() -> None:
    clients = Clients("test-agent", 5.0)
    mine = clients.get()
    assert clients.get() is mine
    assert mine.headers["User-Agent"] == "test-agent"
    other = _in_thread(clients)
    assert other is not mine
    clients.close()


def test_closing_closes_every_client_and_a_later_fetch_gets_a_new_one() -> None:
    clients = Clients("test-agent", 5.0)
    made = [clients.get(), _in_thread(clients), _in_thread(clients)]
    clients.close()
    assert all(client.is_closed for client in made)
    fresh = clients.get()
    assert not fresh.is_closed and fresh not in made
    clients.close()
