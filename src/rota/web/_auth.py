"""Who is asking, and may they do it: roles, bearer tokens, sessions, CSRF.

Two roles: ``viewer`` reads, ``operator`` also acts. With no token configured
everyone is operator (the loopback default); then requests must name a
loopback host (so a DNS-rebinding page cannot reach the dashboard) in a
well-formed ``Host`` header (a malformed one is a 400) and cross-site
requests are refused.

- API clients send ``Authorization: Bearer TOKEN``.
- Browsers log in with a form; the session lives in a signed cookie holding
  the role, a fingerprint of the token it was granted with (so changing the
  token logs everyone out) and a CSRF token. The cookie never holds a token.
- Every state-changing request authenticated by the cookie must carry the
  CSRF token: the ``csrf`` form field (pages) or the ``X-CSRF-Token`` header
  (API calls from the dashboard's script).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import secrets
from dataclasses import dataclass
from enum import IntEnum
from urllib.parse import urlsplit

from starlette.requests import Request

from rota.errors import InvalidArgument, RotaError

__all__ = [
    "Auth",
    "Forbidden",
    "Identity",
    "Role",
    "Unauthorized",
    "check_bind",
    "is_loopback_host",
    "parse_host",
]

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf"


class Role(IntEnum):
    """What a caller may do; a higher role includes the lower ones."""

    VIEWER = 1
    OPERATOR = 2

    @property
    def label(self) -> str:
        """The role's name in lower case."""
        return self.name.lower()


class Unauthorized(RotaError):
    """No valid credentials: the API answers 401, pages redirect to the login form."""


class Forbidden(RotaError):
    """Valid credentials without the right (viewer acting, CSRF token missing)."""


@dataclass(frozen=True, slots=True)
class Identity:
    """An authenticated caller and how it proved it (``bearer``, ``session``, ``open``)."""

    role: Role
    via: str


def is_loopback_host(host: str) -> bool:
    """True for ``localhost``, ``*.localhost`` and loopback IP addresses."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to serve a non-loopback address without an operator token."""
    if not token and not is_loopback_host(host):
        raise InvalidArgument(
            f"refusing to serve the dashboard on {host!r} without a token: anyone who can "
            "reach it could steer the cluster. Pass --token (or ROTA_WEB_TOKEN), or bind "
            "127.0.0.1"
        )


# host[:port] or [IPv6][:port], the port all digits; the name is checked label by label.
_HOST = re.compile(
    r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9.-]+))(?::(?P<port>[0-9]{1,5}))?"
)
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")


def parse_host(header: str) -> str:
    """The host of a ``Host`` header, in lower case and without port or IPv6 brackets.

    Accepts ``name``, ``name:port``, ``[IPv6]`` and ``[IPv6]:port``, where a
    name is dot-separated labels of letters, digits and inner hyphens (an
    IPv4 address is one) and a port is a number up to 65535. Anything else
    (user info, a second colon, a trailing dot, a zone id, an empty label)
    raises :class:`InvalidArgument`.
    """
    match = _HOST.fullmatch(header)
    port = match and match["port"]
    if match and (port is None or int(port) <= 65535):
        if match["v6"] is not None:
            try:
                return ipaddress.IPv6Address(match["v6"]).compressed
            except ValueError:
                pass
        else:
            name = match["name"].lower()
            if len(name) <= 253 and all(_LABEL.fullmatch(label) for label in name.split(".")):
                return name
    raise InvalidArgument(
        "malformed Host header: expected host[:port] or [IPv6][:port] with a numeric port"
    )


class Auth:
    """The dashboard's access policy, built once by :func:`rota.web.create_app`."""

    def __init__(self, token: str | None, viewer_token: str | None, secret: str | None) -> None:
        if viewer_token and not token:
            raise InvalidArgument("viewer_token needs an operator token as well (token=...)")
        if token and viewer_token and hmac.compare_digest(token, viewer_token):
            raise InvalidArgument("token and viewer_token must differ")
        for name, value in (("token", token), ("viewer_token", viewer_token)):
            if value is not None and len(value) < 8:
                raise InvalidArgument(f"{name} must be at least 8 characters long")
        self._tokens: list[tuple[str, Role]] = []
        if token:
            self._tokens.append((token, Role.OPERATOR))
        if viewer_token:
            self._tokens.append((viewer_token, Role.VIEWER))
        #: Signs the session cookie; random per process when not given.
        self.secret = secret or secrets.token_urlsafe(32)
        self._fingerprints = {role: self._fingerprint(tok) for tok, role in self._tokens}

    @property
    def open(self) -> bool:
        """True when no token is configured: everyone is operator."""
        return not self._tokens

    def _fingerprint(self, token: str) -> str:
        digest = hmac.new(self.secret.encode(), token.encode(), hashlib.sha256)
        return digest.hexdigest()[:32]

    def role_for_token(self, token: str) -> Role | None:
        """The role a presented token grants, compared in constant time."""
        found = None
        for candidate, role in self._tokens:
            if hmac.compare_digest(candidate.encode(), token.encode()):
                found = role
        return found

    # -- sessions ----------------------------------------------------------

    def log_in(self, request: Request, token: str) -> Role | None:
        """Start a session for ``token``'s role; None if the token is wrong."""
        role = self.role_for_token(token)
        if role is None:
            return None
        request.session.clear()
        request.session.update(
            role=role.label, auth=self._fingerprints[role], csrf=secrets.token_urlsafe(24)
        )
        return role

    @staticmethod
    def log_out(request: Request) -> None:
        """End the session."""
        request.session.clear()

    @staticmethod
    def csrf_token(request: Request) -> str:
        """The session's CSRF token, created on first use."""
        token = request.session.get("csrf")
        if not isinstance(token, str):
            token = secrets.token_urlsafe(24)
            request.session["csrf"] = token
        return token

    def _session_role(self, request: Request) -> Role | None:
        name = request.session.get("role")
        fingerprint = request.session.get("auth")
        for role, expected in self._fingerprints.items():
            matches = isinstance(fingerprint, str) and hmac.compare_digest(fingerprint, expected)
            if name == role.label and matches:
                return role
        return None

    # -- checks ------------------------------------------------------------

    def identify(self, request: Request) -> Identity:
        """The caller's identity, or :class:`Unauthorized`."""
        if self.open:
            self._check_open_request(request)
        header = request.headers.get("authorization")
        if header is not None:
            scheme, _, value = header.partition(" ")
            if scheme.lower() != "bearer" or not value.strip():
                raise Unauthorized("the Authorization header must be 'Bearer TOKEN'")
            if self.open:
                return Identity(Role.OPERATOR, "bearer")
            role = self.role_for_token(value.strip())
            if role is None:
                raise Unauthorized("invalid token")
            return Identity(role, "bearer")
        if self.open:
            via = "session" if request.session.get("csrf") else "open"
            return Identity(Role.OPERATOR, via)
        role = self._session_role(request)
        if role is None:
            raise Unauthorized("log in, or send 'Authorization: Bearer TOKEN'")
        return Identity(role, "session")

    @staticmethod
    def _check_open_request(request: Request) -> None:
        """Without tokens only loopback hosts and same-origin requests get in."""
        host = request.headers.get("host", "")
        if not is_loopback_host(parse_host(host)):
            raise Forbidden(
                "this dashboard has no token and only answers on a loopback address; "
                "configure a token to serve other hosts"
            )
        if request.method in SAFE_METHODS:
            return
        if request.headers.get("sec-fetch-site") in ("cross-site", "same-site"):
            raise Forbidden("cross-site requests are refused")
        origin = request.headers.get("origin")
        if origin and (origin == "null" or urlsplit(origin).netloc != host):
            raise Forbidden("cross-origin requests are refused")

    def require(self, request: Request, role: Role, csrf: str | None) -> Identity:
        """Check the caller has ``role``; for actions through a session, check ``csrf``."""
        identity = self.identify(request)
        if identity.role < role:
            raise Forbidden(f"this needs the {role.label} role; you are {identity.role.label}")
        if request.method not in SAFE_METHODS and identity.via == "session":
            expected = request.session.get("csrf")
            if not csrf or not isinstance(expected, str):
                raise Forbidden("missing CSRF token; reload the page and try again")
            if not hmac.compare_digest(csrf.encode(), expected.encode()):
                raise Forbidden("CSRF token does not match; reload the page and try again")
        return identity
