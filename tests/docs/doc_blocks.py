"""Fenced code blocks of the Markdown docs, grouped into runnable examples.

A block is a fence of ```python, ```sh, ```bash or ```console. HTML comments
on the lines directly above a fence steer how it runs::

    <!-- doc-test: continue -->            same example as the block before it:
                                           same directory, same store, and any
                                           background command still running
    <!-- doc-test: file: tasks.py -->      write the block to tasks.py instead
                                           of running it
    <!-- doc-test: background: until TEXT -->
                                           start the commands, wait until their
                                           output shows TEXT, stop them when the
                                           example ends
    <!-- doc-test: expect: TEXT -->        a line of the block's output is TEXT
    <!-- doc-test: env: NAME NAME -->      set these variables to fresh secrets
    <!-- doc-test: store: redis -->        run the example on a Redis namespace
                                           of its own, postgres for a schema or
                                           mysql for a database of its own
                                           (default: a SQLite file)
    <!-- doc-test: skip: WHY; covered by PATH -->
                                           not run; PATH is where it is checked

Every example runs in a fresh directory with ``ROTA_URL`` naming its own store.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LANGUAGES = {"python": "python", "sh": "sh", "bash": "sh", "console": "console"}
KINDS = {"continue", "file", "background", "expect", "env", "store", "skip"}
STORES = {"sqlite", "redis", "postgres", "mysql"}

_FENCE = re.compile(r"^(?P<indent> {0,3})```(?P<lang>[\w+-]*)\s*$")
_MARKER = re.compile(r"^\s*<!--\s*doc-test:\s*(?P<kind>[\w-]+)\s*(?::\s*(?P<arg>.*?))?\s*-->\s*$")
_COVERED = re.compile(r"^(?P<why>.+?);\s*covered by\s+(?P<path>\S+)$")


class DocTestMarkupError(ValueError):
    """A doc-test marker that the extractor does not understand."""


@dataclass(frozen=True)
class Block:
    """One fenced code block and the markers above it."""

    path: Path
    line: int
    lang: str
    code: str
    markers: dict[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        shown = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{shown}:{self.line}"

    @property
    def skip(self) -> tuple[str, str] | None:
        """``(why, covered_by)`` for a skipped block, else None."""
        if "skip" not in self.markers:
            return None
        match = _COVERED.match(self.markers["skip"])
        if match is None:
            raise DocTestMarkupError(f"{self.where}: skip must say 'WHY; covered by PATH'")
        return match["why"], match["path"]

    def commands(self) -> str:
        """The block as a shell script (a console block keeps only its ``$`` lines)."""
        if self.lang != "console":
            return self.code
        lines: list[str] = []
        continued = False
        for line in self.code.splitlines():
            if continued:
                lines.append(line)
            elif line.startswith("$ "):
                lines.append(line[2:])
            else:
                continue
            continued = line.rstrip().endswith("\\")
        return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Example:
    """Blocks that run one after another in one directory against one store."""

    blocks: tuple[Block, ...]

    @property
    def id(self) -> str:
        return self.blocks[0].where

    @property
    def store(self) -> str:
        return self.blocks[0].markers.get("store", "sqlite")


def doc_files() -> list[Path]:
    """README.md and every page under docs/, picked up as they are added."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def parse_marker(line: str) -> tuple[str, str] | None:
    """``(kind, argument)`` of a doc-test comment, None for any other line."""
    match = _MARKER.match(line)
    if match is None:
        if "doc-test" in line:
            raise DocTestMarkupError(f"malformed doc-test marker: {line.strip()!r}")
        return None
    kind, arg = match["kind"], match["arg"] or ""
    if kind not in KINDS:
        raise DocTestMarkupError(f"unknown doc-test marker {kind!r} (known: {sorted(KINDS)})")
    if kind == "store" and arg not in STORES:
        raise DocTestMarkupError(f"unknown store {arg!r} (known: {sorted(STORES)})")
    if kind in {"file", "background", "expect", "env", "skip", "store"} and not arg:
        raise DocTestMarkupError(f"doc-test marker {kind!r} needs an argument")
    return kind, arg


def _markers_above(lines: list[str], fence: int) -> dict[str, str]:
    markers: dict[str, str] = {}
    index = fence - 1
    while index >= 0 and (parsed := parse_marker(lines[index])) is not None:
        markers.setdefault(*parsed)
        index -= 1
    return markers


def _check_attached(lines: list[str], index: int, path: Path) -> None:
    below = index + 1
    while below < len(lines) and parse_marker(lines[below]) is not None:
        below += 1
    if below == len(lines) or _FENCE.match(lines[below]) is None:
        raise DocTestMarkupError(
            f"{path.name}:{index + 1}: a doc-test marker must sit on the "
            "lines directly above a code fence"
        )


def blocks_of(path: Path) -> list[Block]:
    """The runnable-language blocks of one Markdown file, in order."""
    lines = path.read_text().splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            if parse_marker(lines[index]) is not None:
                _check_attached(lines, index, path)
            index += 1
            continue
        end = index + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        lang = LANGUAGES.get(opening["lang"])
        if lang is not None:
            code = "\n".join(lines[index + 1 : end]) + "\n"
            markers = _markers_above(lines, index)
            blocks.append(Block(path, index + 1, lang, code, markers))
        index = end + 1
    return blocks


def examples_of(blocks: list[Block]) -> list[Example]:
    """Group blocks: each starts an example unless marked ``continue``."""
    groups: list[list[Block]] = []
    for block in blocks:
        if block.skip is not None:
            continue
        if "continue" in block.markers:
            if not groups:
                raise DocTestMarkupError(f"{block.where}: 'continue' with nothing before it")
            groups[-1].append(block)
        else:
            groups.append([block])
    return [Example(tuple(group)) for group in groups]
