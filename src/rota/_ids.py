"""Ids unique across processes and machines, made without a system call each."""

from __future__ import annotations

import os
import random


class UniqueIds:
    """128 random bits as 32 hex digits, from a generator seeded by the OS (and
    seeded again in a forked child, which would otherwise repeat its parent's).

    Every digit is random: Redis's Lua hashes long strings from a sample of
    their characters, so ids that share a prefix and differ in a few places
    would crowd into few buckets of its string table.
    """

    def __init__(self) -> None:
        self.reseed()

    def reseed(self) -> None:
        """Seed the generator from the OS."""
        self._random = random.Random(os.urandom(32))

    def next(self) -> str:
        """A fresh id."""
        return f"{self._random.getrandbits(128):032x}"


#: Job ids, request ids and claim tokens.
unique_ids = UniqueIds()
if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=unique_ids.reseed)
