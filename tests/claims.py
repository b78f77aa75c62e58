"""A claim function in place of a worker's, for executor tests: it hands out
prepared batches of jobs, one per call, and records each call."""

from __future__ import annotations

import threading
import time

from rota.models import ClaimedJob


class Claims:
    """Hands out ``batches``, one per call; with none left, waits a little (as
    a claim waits while there is no work) and returns none. Records each call's
    thread and the batches left, and counts claims under way."""

    def __init__(self, batches: list[list[ClaimedJob]]) -> None:
        self.batches = batches
        self.calls: list[tuple[str, int]] = []  # (thread, batches left)
        self.lock = threading.Lock()
        self.idle = threading.Event()  # set while nothing is left to hand out
        self.fail_next = False
        self.under_way = 0

    def __call__(self) -> list[ClaimedJob] | None:
        with self.lock:
            if self.fail_next:
                self.fail_next = False
                raise RuntimeError("store hiccup")
            self.calls.append((threading.current_thread().name, len(self.batches)))
            if self.batches:
                return self.batches.pop(0)
            self.under_way += 1
        self.idle.set()
        time.sleep(0.01)
        with self.lock:
            self.under_way -= 1
        return []
