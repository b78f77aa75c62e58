"""The dashboard and REST API: ``rota.web.create_app(app)`` is an ASGI application.

Needs the ``web`` extra (``pip install 'rota[web]'``). Pages and API read and
steer the cluster only through the store protocol, so every backend gets
them. Serve with ``rota web APP`` or any ASGI server.
"""

from __future__ import annotations

try:
    import fastapi  # noqa: F401
    import jinja2  # noqa: F401
    import prometheus_client  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        f"the rota dashboard needs the web extra ({exc.name} is missing): pip install 'rota[web]'"
    ) from exc

from rota.web._app import create_app
from rota.web._auth import check_bind

__all__ = ["check_bind", "create_app"]
