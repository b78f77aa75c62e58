"""Who acts from the command line: the login name, origin ``cli``."""

from __future__ import annotations

import os

from rota.admin import Actor

__all__ = ["cli_actor"]


def cli_actor() -> Actor:
    """The :class:`~rota.admin.Actor` of a CLI command: ``$USER`` (else ``cli``),
    full rights (whoever can reach the store can change it), origin ``cli``."""
    return Actor(name=os.environ.get("USER") or "cli", origin="cli")
