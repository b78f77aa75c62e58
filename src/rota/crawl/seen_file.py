"""A seen-set in a file beside the app's SQLite database, shared by the
processes of the machine through a shared memory map.

The file (``rota.db-seen-NAME``) is a 32-byte header (magic, bits, hash
positions) and the bitmap, made sparse at full size on first use. A batch
is added under an exclusive ``flock`` of the file, so two processes adding
the same URL never both see it new; reads take a shared lock. Like the
SQLite store it serves one machine (a local filesystem, where locks hold).
"""

from __future__ import annotations

import fcntl
import mmap
import os
import struct
import threading
from collections.abc import Sequence

from rota.crawl.seen import positions
from rota.errors import InvalidArgument

__all__ = ["FileSeen"]

_MAGIC = b"rotaseen"
_HEADER = struct.Struct("<8sQI12x")  # magic, bits, hashes, padding: 32 bytes


class FileSeen:
    """A Bloom filter of ``bits`` bits and ``hashes`` positions per URL in
    the file ``path``."""

    def __init__(self, path: str, bits: int, hashes: int) -> None:
        self.path, self.bits, self.hashes = path, bits, hashes
        self._threads = threading.Lock()  # flock does not exclude threads sharing the file
        size = _HEADER.size + (bits + 7) // 8
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                self._check_or_make(size)
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            self._map = mmap.mmap(self._fd, size)
        except BaseException:
            os.close(self._fd)
            raise

    def _check_or_make(self, size: int) -> None:
        header = os.pread(self._fd, _HEADER.size, 0)
        if not header:
            os.ftruncate(self._fd, size)
            os.pwrite(self._fd, _HEADER.pack(_MAGIC, self.bits, self.hashes), 0)
            return
        if len(header) < _HEADER.size or header[:8] != _MAGIC:
            raise InvalidArgument(f"{self.path} is not a rota seen-set file")
        _, bits, hashes = _HEADER.unpack(header)
        if (bits, hashes) != (self.bits, self.hashes):
            raise InvalidArgument(
                f"the seen-set file {self.path} holds {bits} bits with {hashes} positions per "
                f"URL; this crawler asks for {self.bits} with {self.hashes}: delete the file "
                "to start a fresh seen-set of the new size"
            )

    def add(self, urls: Sequence[str]) -> list[bool]:
        """See :meth:`rota.crawl.seen.SeenBackend.add`: one exclusive lock."""
        wanted = [positions(url, self.bits, self.hashes) for url in urls]
        with self._threads:
            return self._add(wanted)

    def _add(self, wanted: list[list[int]]) -> list[bool]:
        found = self._map
        out: list[bool] = []
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            for spots in wanted:
                new = False
                for bit in spots:
                    at, mask = _HEADER.size + (bit >> 3), 1 << (bit & 7)
                    byte = found[at]
                    if not byte & mask:
                        found[at] = byte | mask
                        new = True
                out.append(new)
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        return out

    def contains(self, urls: Sequence[str]) -> list[bool]:
        """See :meth:`rota.crawl.seen.SeenBackend.contains`: one shared lock."""
        wanted = [positions(url, self.bits, self.hashes) for url in urls]
        with self._threads:
            fcntl.flock(self._fd, fcntl.LOCK_SH)
            try:
                return [
                    all(self._map[_HEADER.size + (b >> 3)] & (1 << (b & 7)) for b in spots)
                    for spots in wanted
                ]
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        """Unmap and close the file."""
        with self._threads:
            self._map.close()
            os.close(self._fd)
