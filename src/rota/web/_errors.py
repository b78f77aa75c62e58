"""rota errors as HTTP answers: JSON under ``/api/`` and ``/metrics``, HTML pages elsewhere."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from http import HTTPStatus
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.templating import Jinja2Templates

from rota import errors
from rota.errors import (
    AmbiguousJobId,
    InvalidArgument,
    InvalidSchedule,
    JobNotFound,
    JobTimeout,
    PayloadTooLarge,
    RotaError,
    SerializationError,
    StoreUnavailable,
    UnknownTask,
)
from rota.web._auth import Forbidden, Identity, Unauthorized
from rota.web._deps import context
from rota.web._ops import Conflict, NotFound

__all__ = ["ErrorFrame", "install_error_handlers", "status_for"]

log = logging.getLogger("rota.web")

# Most specific first: the first match wins.
_STATUS: tuple[tuple[type[Exception], int, str], ...] = (
    (Unauthorized, 401, "unauthorized"),
    (Forbidden, 403, "forbidden"),
    (errors.Forbidden, 403, "forbidden"),
    (JobNotFound, 404, "not_found"),
    (NotFound, 404, "not_found"),
    (UnknownTask, 404, "unknown_task"),
    (Conflict, 409, "conflict"),
    (AmbiguousJobId, 409, "ambiguous_id"),
    (PayloadTooLarge, 413, "payload_too_large"),
    (InvalidSchedule, 400, "invalid_schedule"),
    (SerializationError, 400, "serialization_error"),
    (InvalidArgument, 400, "invalid_argument"),
    (StoreUnavailable, 503, "store_unavailable"),
    (JobTimeout, 504, "timeout"),
)


def status_for(exc: Exception) -> tuple[int, str]:
    """The HTTP status and error code for a rota error."""
    for cls, status, code in _STATUS:
        if isinstance(exc, cls):
            return status, code
    return 500, "internal_error"


def _wants_json(request: Request) -> bool:
    path = request.url.path
    return path.startswith("/api/") or path == "/api" or path == "/metrics"


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for error in exc.errors():
        if error.get("type") == "json_invalid":  # its loc is a position, not a field
            position = error.get("loc", ("body", "?"))[-1]
            reason = error.get("ctx", {}).get("error", "invalid")
            parts.append(f"the body is not JSON: {reason} at character {position}")
            continue
        where = [str(p) for p in error.get("loc", ()) if p not in ("query", "path", "body")]
        field = ".".join(where) or "request"
        parts.append(f"{field}: {error.get('msg', 'invalid')}")
    return "; ".join(parts)


@dataclass(frozen=True, slots=True)
class ErrorFrame:
    """Set on ``request.state.error_frame`` for an error page: it is shown in
    the dashboard's frame (navigation, title), with the caller's name, role
    and the store only for a caller the dashboard knows (``identity``)."""

    identity: Identity | None


def _known_caller(request: Request, status: int) -> Identity | None:
    """Who asks, for an error page's frame; None for a caller not (yet) known,
    and without asking the store on a server error (5xx: the store may be what
    failed, and the page must render while it is down)."""
    if status >= 500:
        return None
    try:
        return context(request).auth.identify(request)
    except Exception:  # not logged in, a refused host, a store that fails now: a stranger
        return None


def install_error_handlers(api: FastAPI, templates: Jinja2Templates) -> None:
    """Map rota errors, validation errors and HTTP errors to answers."""

    def answer(request: Request, status: int, code: str, detail: str) -> Response:
        if status == 401 and not _wants_json(request):
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            return RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)
        if _wants_json(request):
            headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
            return JSONResponse({"error": code, "detail": detail}, status, headers=headers)
        identity = _known_caller(request, status)
        request.state.bare_frame = False  # (set by a login page that failed)
        request.state.error_frame = ErrorFrame(identity)
        return templates.TemplateResponse(
            request,
            "error.html",
            {
                "status": status,
                "reason": HTTPStatus(status).phrase,
                "detail": detail,
                "identity": identity,
            },
            status_code=status,
        )

    async def on_rota_error(request: Request, exc: Exception) -> Response:
        status, code = status_for(exc)
        if isinstance(exc, StoreUnavailable):
            log.error("%s %s failed: %s", request.method, request.url.path, exc)
            detail = "the store cannot be reached; the dashboard's log says which and why"
            return answer(request, status, code, detail)
        if status >= 500:  # the reason may name the store: for the operator's log only
            log.error(
                "%s %s failed: %s: %s", request.method, request.url.path, type(exc).__name__, exc
            )
            detail = f"{type(exc).__name__}: the request failed; the dashboard's log says why"
            return answer(request, status, code, detail)
        return answer(request, status, code, str(exc))

    async def on_validation(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        return answer(request, 422, "invalid_request", _validation_message(exc))

    async def on_http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        code = HTTPStatus(exc.status_code).phrase.lower().replace(" ", "_")
        return answer(request, exc.status_code, code, str(exc.detail))

    async def on_unexpected(request: Request, exc: Exception) -> Response:
        log.exception("%s %s failed", request.method, request.url.path)
        return answer(request, 500, "internal_error", "internal error; see the server log")

    api.add_exception_handler(RotaError, on_rota_error)
    api.add_exception_handler(RequestValidationError, on_validation)
    api.add_exception_handler(StarletteHTTPException, on_http)
    api.add_exception_handler(Exception, on_unexpected)
