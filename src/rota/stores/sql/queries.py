"""Named queries: ``.sql`` files whose statements each follow a ``-- name: NAME`` line."""

from __future__ import annotations

import re
from importlib import resources

_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)
#: The query files every dialect has, one per part of the engine, beside its
#: own ``connection.sql``.
ENGINE_FILES = (
    "jobs.sql",
    "reads.sql",
    "steer.sql",
    "schedules.sql",
    "audit.sql",
    "logs.sql",
    "users.sql",
)


def load(package: str, *files: str) -> dict[str, str]:
    """Every named query of ``files`` (in the ``queries/`` folder of
    ``package``), by name; a name defined twice is an error."""
    folder = resources.files(package).joinpath("queries")
    found: dict[str, str] = {}
    for file in files:
        parts = _NAME.split(folder.joinpath(file).read_text())
        for name, body in zip(parts[1::2], parts[2::2], strict=True):
            if name in found:
                raise ValueError(f"query {name!r} is defined twice in {package}")
            found[name] = body.strip()
    return found


def migrations(package: str) -> list[tuple[int, str]]:
    """``(version, script)`` for every ``.sql`` file of ``package``'s
    ``migrations/`` folder, in version order."""
    folder = resources.files(package).joinpath("migrations")
    found = []
    for entry in folder.iterdir():
        if entry.name.endswith(".sql"):
            found.append((int(entry.name.split("_", 1)[0]), entry.read_text()))
    return sorted(found)


def newest_migration(package: str) -> int:
    """The version of the newest migration ``package`` ships."""
    return migrations(package)[-1][0]
