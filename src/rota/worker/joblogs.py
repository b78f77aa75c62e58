"""Job logs: what each attempt writes, kept in the store.

A running attempt's output reaches :func:`write` through its context
(:meth:`JobContext.log_output`): its ``current_job().logger`` records (a
handler on the ``rota.task`` logger), its ``print()`` and other writes to
``sys.stdout`` / ``sys.stderr`` (proxies that route a write made inside a
job's context to that job and any other to the real stream), and a
command's output. Writes are cut into lines and buffered per attempt; a
flusher thread appends them to the store in one batch at most every
:data:`FLUSH_EVERY` seconds, and :func:`end` flushes the rest of an attempt
when it returns. An attempt that writes nothing costs one dictionary look-up.
"""

from __future__ import annotations

import codecs
import logging
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from rota.context import JobContext, current_context
from rota.models import LogChunk

if TYPE_CHECKING:
    from rota.app import App

log = logging.getLogger("rota.worker")

#: Seconds between two flushes of buffered output.
FLUSH_EVERY = 0.5
#: An unfinished line is cut into a chunk of its own past this many characters.
MAX_LINE = 8192
_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_utf8 = codecs.getincrementaldecoder("utf-8")


@dataclass(slots=True)
class _Attempt:
    app: App
    chunks: list[LogChunk] = field(default_factory=list)
    partial: dict[str, str] = field(default_factory=dict)
    decoders: dict[str, codecs.IncrementalDecoder] = field(default_factory=dict)

    def decode(self, stream: str, data: bytes, final: bool = False) -> str:
        """``data`` as text, holding back a character cut at its end."""
        decoder = self.decoders.get(stream)
        if decoder is None:
            decoder = self.decoders[stream] = _utf8(errors="replace")
        return decoder.decode(data, final)


class _Buffers:
    """Output of this process's running attempts, waiting to be stored."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.attempts: dict[tuple[str, int], _Attempt] = {}
        self.wake = threading.Event()
        self.pid = 0

    def write(self, ctx: JobContext, stream: str, data: bytes | str) -> None:
        assert ctx.app is not None
        now = time.time()
        with self.lock:
            attempt = self.attempts.get((ctx.id, ctx.attempt))
            if attempt is None:
                attempt = self.attempts[ctx.id, ctx.attempt] = _Attempt(ctx.app)
            text = storable(data if isinstance(data, str) else attempt.decode(stream, data))
            text = attempt.partial.pop(stream, "") + text
            lines = text.splitlines(keepends=True)
            if lines and not lines[-1].endswith(("\n", "\r")) and len(lines[-1]) < MAX_LINE:
                attempt.partial[stream] = lines.pop()
            attempt.chunks += [LogChunk(ctx.id, ctx.attempt, stream, s, now) for s in lines]
        if self.pid != os.getpid():
            self._start_flusher()

    def _start_flusher(self) -> None:
        with self.lock:
            if self.pid == os.getpid():
                return
            self.pid = os.getpid()  # in a forked child the parent's thread is gone
        threading.Thread(target=self._flush_loop, name="rota-joblogs", daemon=True).start()

    def _flush_loop(self) -> None:
        while True:
            self.wake.wait(FLUSH_EVERY)
            self.flush(None)

    def flush(self, key: tuple[str, int] | None, *, final: bool = False) -> None:
        """Store the complete lines of one attempt (``key``) or of all; with
        ``final``, its unfinished lines too, and forget the attempt."""
        batches: dict[int, tuple[App, list[LogChunk]]] = {}
        with self.lock:
            keys = list(self.attempts) if key is None else [key]
            for k in keys:
                attempt = self.attempts.get(k)
                if attempt is None:
                    continue
                if final:
                    del self.attempts[k]
                    now = time.time()
                    for stream in attempt.decoders:
                        rest = attempt.decode(stream, b"", final=True)
                        attempt.partial[stream] = attempt.partial.get(stream, "") + rest
                    for stream, text in attempt.partial.items():
                        if text:
                            attempt.chunks.append(LogChunk(k[0], k[1], stream, text, now))
                if attempt.chunks:
                    app, chunks = batches.setdefault(id(attempt.app), (attempt.app, []))
                    chunks += attempt.chunks
                    attempt.chunks = []
        for app, chunks in batches.values():
            try:
                app.store.append_logs(chunks, app.job_log_cap)
            except Exception:
                log.warning("%d job log line(s) could not be stored", len(chunks), exc_info=True)


_buffers = _Buffers()


def write(ctx: JobContext, stream: str, data: bytes | str) -> None:
    """Keep what the attempt of ``ctx`` wrote on ``stream`` (bytes: UTF-8)."""
    _buffers.write(ctx, stream, data)


def end(ctx: JobContext) -> None:
    """Store the rest of what the attempt of ``ctx`` wrote; call when it returns."""
    if (ctx.id, ctx.attempt) in _buffers.attempts:
        _buffers.flush((ctx.id, ctx.attempt), final=True)


class _JobLogHandler(logging.Handler):
    """Sends the records logged inside a job's context to its log."""

    def emit(self, record: logging.LogRecord) -> None:
        ctx = current_context()
        if ctx is not None and ctx.log_sink is not None:
            try:
                ctx.log_sink(ctx, "log", self.format(record) + "\n")
            except Exception:
                self.handleError(record)


class _Route:
    """A ``sys.stdout`` / ``sys.stderr`` stand-in: a write made inside a job's
    context goes to the job's log, any other to the real stream."""

    def __init__(self, real: TextIO, stream: str) -> None:
        self._real = real
        self._stream = stream

    def write(self, text: str) -> int:
        ctx = current_context()
        if ctx is None or ctx.log_sink is None:
            return self._real.write(text)
        ctx.log_sink(ctx, self._stream, text)
        return len(text)

    def flush(self) -> None:
        ctx = current_context()
        if ctx is None or ctx.log_sink is None:
            self._real.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


_installed = threading.Lock()


def install() -> None:
    """Capture job output in this process: the ``rota.task`` log handler and
    the ``sys.stdout`` / ``sys.stderr`` routes. Idempotent."""
    with _installed:
        task_log = logging.getLogger("rota.task")
        if not any(isinstance(h, _JobLogHandler) for h in task_log.handlers):
            handler = _JobLogHandler()
            handler.setFormatter(logging.Formatter(_FORMAT))
            task_log.addHandler(handler)
        if not isinstance(sys.stdout, _Route):
            sys.stdout = _Route(sys.stdout, "stdout")
        if not isinstance(sys.stderr, _Route):
            sys.stderr = _Route(sys.stderr, "stderr")


__all__ = ["FLUSH_EVERY", "end", "install", "storable", "write"]


def storable(text: str) -> str:
    """``text`` as every store can keep it: NUL written ``\\x00`` (PostgreSQL's
    text refuses it), and what UTF-8 cannot encode (lone surrogates, as in a
    file name decoded with ``surrogateescape``) escaped the same way."""
    if "\0" in text:
        text = text.replace("\0", "\\x00")
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode(errors="backslashreplace").decode()
    return text
