"""Ids unique across processes and machines, made without a system call each."""

from __future__ import annotations

import itertools
import os


class UniqueIds:
    """A random prefix (96 bits, drawn again in a forked child and whenever the
    counter wraps) followed by a counter: 32 hex digits per id."""

    def __init__(self) -> None:
        self.reseed()

    def reseed(self) -> None:
        """A new prefix and counter (in a forked child, the parent's are shared)."""
        self._prefix = os.urandom(12).hex()
        self._count = itertools.count()

    def next(self) -> str:
        """A fresh id."""
        n = next(self._count)
        if n > 0xFFFFFFFF:
            self.reseed()
            n = next(self._count)
        return f"{self._prefix}{n:08x}"


#: Job ids, request ids and claim tokens.
unique_ids = UniqueIds()
if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=unique_ids.reseed)
