"""The commands' log handler writes a batch's job lines in one write, keeps
the order of every record, survives a stream that is gone, and leaves a
forked child none of its held lines."""

from __future__ import annotations

import io
import logging
import os
import threading
from collections.abc import Iterator

import pytest

from rota.worker import joblog


class _Writes(io.StringIO):
    """A text stream that keeps each write apart and counts its flushes."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []
        self.flushes = 0

    def write(self, text: str) -> int:
        self.writes.append(text)
        return super().write(text)

    def flush(self) -> None:
        self.flushes += 1


@pytest.fixture
def logged() -> Iterator[tuple[logging.Logger, _Writes]]:
    stream = _Writes()
    handler = joblog.BatchHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("rota.test-batches")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    yield logger, stream
    logger.removeHandler(handler)
    handler.close()


def test_a_record_outside_a_batch_is_written_at_once(
    logged: tuple[logging.Logger, _Writes],
) -> None:
    logger, stream = logged
    logger.info("one")
    assert stream.writes == ["one\n"]
    logger.info("two")
    assert stream.writes == ["one\n", "two\n"]


def test_the_lines_of_a_batch_are_written_together_when_it_ends(
    logged: tuple[logging.Logger, _Writes],
) -> None:
    logger, stream = logged
    with joblog.batch():
        for n in range(3):
            logger.info("line %d", n)
        assert stream.writes == []  # held
    assert stream.writes == ["line 0\nline 1\nline 2\n"]


def test_a_batch_that_logs_nothing_writes_and_flushes_nothing(
    logged: tuple[logging.Logger, _Writes],
) -> None:
    logger, stream = logged
    logger.setLevel(logging.WARNING)  # job lines off, as with --quiet
    with joblog.batch():
        logger.info("not logged")
    assert stream.writes == [] and stream.flushes == 0


def test_another_threads_record_comes_after_the_lines_held_before_it(
    logged: tuple[logging.Logger, _Writes],
) -> None:
    logger, stream = logged
    with joblog.batch():
        logger.info("held")
        other = threading.Thread(target=logger.warning, args=("from another thread",))
        other.start()
        other.join(timeout=10)
        logger.info("held after")
    assert stream.getvalue() == "held\nfrom another thread\nheld after\n"


def test_a_batch_that_raises_still_writes_its_lines(
    logged: tuple[logging.Logger, _Writes],
) -> None:
    logger, stream = logged
    with pytest.raises(KeyError), joblog.batch():
        logger.info("before the error")
        raise KeyError("x")
    assert stream.getvalue() == "before the error\n"
    logger.info("after")  # no longer held
    assert stream.writes[-1] == "after\n"


def test_a_stream_gone_loses_its_lines_and_raises_nothing() -> None:
    stream = io.StringIO()
    handler = joblog.BatchHandler(stream)
    logger = logging.getLogger("rota.test-batches-closed")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        stream.close()
        with joblog.batch():
            logger.warning("lost")
        logger.warning("lost too")
    finally:
        logger.removeHandler(handler)
        handler.close()


def test_the_worker_commands_log_through_it() -> None:
    from rota.cli._logging import configure

    root = logging.getLogger()
    saved = root.handlers[:], root.level
    root.handlers.clear()
    try:
        configure("info", False, "text")
        assert [type(h) for h in root.handlers] == [joblog.BatchHandler]
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)


def test_a_child_forked_during_a_batch_does_not_write_the_parents_lines(
    logged: tuple[logging.Logger, _Writes],
) -> None:
    logger, stream = logged
    handler = logger.handlers[0]
    assert isinstance(handler, joblog.BatchHandler)
    read, write = os.pipe()
    with joblog.batch():
        logger.info("the parent's")
        pid = os.fork()
        if pid == 0:  # the child: what its handler still holds, through the pipe
            os.write(write, str(len(handler._held)).encode())
            os._exit(0)
    os.close(write)
    held_in_child = os.read(read, 16)
    os.close(read)
    os.waitpid(pid, 0)
    assert held_in_child == b"0"
    assert stream.getvalue() == "the parent's\n"
