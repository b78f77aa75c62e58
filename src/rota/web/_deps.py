"""Shared state of one dashboard and the FastAPI dependencies that reach it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client.registry import CollectorRegistry
from starlette.templating import Jinja2Templates

from rota.app import App
from rota.stores.base import Store
from rota.web._auth import CSRF_FIELD, CSRF_HEADER, Auth, Identity, Role

__all__ = ["Context", "api_operator", "api_viewer", "context", "page_operator", "page_viewer"]

# Documents bearer auth in the OpenAPI schema; the checking is done by Auth.
_bearer = HTTPBearer(auto_error=False, description="An operator or viewer token.")


@dataclass(frozen=True, slots=True)
class Context:
    """What every request handler needs: the rota app, the access policy,
    the metrics registry and the page templates.

    Handlers read what they show through :attr:`store` (the app's reader: a
    read replica when one is set) and act through ``app.admin``, which works
    on the primary (``app.store``), as does every read an action depends on."""

    app: App
    auth: Auth
    registry: CollectorRegistry
    templates: Jinja2Templates

    @property
    def store(self) -> Store:
        """The store that reads for display (``app.reader``), opened on first use."""
        return self.app.reader


def context(request: Request) -> Context:
    """The dashboard's :class:`Context`."""
    ctx: Context = request.app.state.rota
    return ctx


def api_viewer(
    request: Request, _: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> Identity:
    """API reads: any authenticated caller."""
    return context(request).auth.require(request, Role.VIEWER, None)


def api_operator(
    request: Request, _: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> Identity:
    """API actions: operators; through a session cookie also the ``X-CSRF-Token`` header."""
    return context(request).auth.require(request, Role.OPERATOR, request.headers.get(CSRF_HEADER))


def page_viewer(request: Request) -> Identity:
    """Pages: any logged-in caller (else the login form)."""
    return context(request).auth.require(request, Role.VIEWER, None)


async def page_operator(request: Request) -> Identity:
    """Page forms that act: operators, with the session's CSRF token in the form."""
    form = await request.form()
    token = form.get(CSRF_FIELD)
    return context(request).auth.require(
        request, Role.OPERATOR, token if isinstance(token, str) else None
    )
