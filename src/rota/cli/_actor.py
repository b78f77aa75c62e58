"""Who acts from the command line: the login name, origin ``cli``."""

from __future__ import annotations

import getpass
import os

from rota.admin import Actor

__all__ = ["cli_actor"]


def cli_actor() -> Actor:
    """The :class:`~rota.admin.Actor` of a CLI command: ``$USER``, else the
    login name the system knows (else ``cli``), full rights (whoever can
    reach the store can change it), origin ``cli``."""
    name = os.environ.get("USER")
    if not name:
        try:
            name = getpass.getuser()
        except (OSError, KeyError):  # no login name, and no entry for the uid
            name = ""
    return Actor(name=name or "cli", origin="cli")
