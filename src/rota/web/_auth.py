"""Who is asking, and may they do it: roles, bearer tokens, users, sessions, CSRF.

Three roles: ``viewer`` reads, ``operator`` also acts, ``admin`` also manages
users. Callers are known by a shared token (operator or viewer, for small
set-ups) or as users (``rota users add``), each with a role of their own.
With no token configured and no user in the store everyone is operator (the
loopback default); then requests must name a loopback host (so a
DNS-rebinding page cannot reach the dashboard) in a well-formed ``Host``
header (a malformed one is a 400) and cross-site requests are refused.

- API clients send ``Authorization: Bearer TOKEN``: a shared token or a
  user's API token (``rota users token``).
- Browsers log in with a form: a user name and password, or a shared token.
  The session lives in a signed cookie holding the user name or role, a
  fingerprint of the password hash or token it was granted with (so changing
  either, or removing the user, logs the session out; a user's role is read
  from the store on every request) and a CSRF token. The cookie never holds
  an API token or a password hash. A user's session is also a token of theirs in
  the store, labelled ``dashboard-session-TIME-ID``, whose secret the
  cookie holds (hashed apart from API tokens', so it is no bearer token):
  Log out deletes it, and a copy of the cookie is then worth nothing;
  revoking it (``rota users revoke``) ends that session; a login deletes
  the user's sessions past their age (:mod:`rota._users`).
- Failed logins are limited per client address (:class:`LoginLimiter`) and
  a user's failed logins are written to the audit log.
- Every state-changing request authenticated by the cookie must carry the
  CSRF token: the ``csrf`` form field (pages) or the ``X-CSRF-Token`` header
  (API calls from the dashboard's script).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import re
import secrets
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from starlette.requests import Request

from rota.admin import Actor
from rota.errors import InvalidArgument, NotFound, RotaError

if TYPE_CHECKING:
    from rota.app import App
    from rota.models import User

__all__ = [
    "CLI_TOKEN_NAMES",
    "Auth",
    "Forbidden",
    "Identity",
    "LoginLimiter",
    "Role",
    "TokenNames",
    "Unauthorized",
    "check_bind",
    "check_tokens",
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
    ADMIN = 3

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
    """An authenticated caller and how it proved it (``bearer``, ``session``,
    ``open``); ``user`` is the user's name, None for a shared token or an open
    dashboard."""

    role: Role
    via: str
    user: str | None = None
    #: True on a dashboard without a login (no token, no user), where anyone on
    #: this machine acts.
    local: bool = False

    @property
    def name(self) -> str:
        """Who acts, as the audit log names them: the user; ``local`` on a
        dashboard without a login; else ``token``."""
        return self.user or ("local" if self.local else "token")


def _user_role(user: User) -> Role:
    return Role[user.role.upper()]


def client_address(request: Request) -> str:
    """The client's address, as the login limiter and the audit log know it."""
    return request.client.host if request.client else "unknown"


class LoginLimiter:
    """At most ``failures`` failed logins per client address in ``window``
    seconds; addresses over it are refused until their oldest failure ages out.
    In-process (each dashboard process counts its own); remembers at most
    ``addresses`` addresses, forgetting the least recently failed."""

    def __init__(self, failures: int = 10, window: float = 300.0, addresses: int = 10_000) -> None:
        self.failures = failures
        self.window = window
        self._addresses = addresses
        self._seen: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def _recent(self, address: str, now: float) -> deque[float]:
        times = self._seen.get(address, deque())
        while times and times[0] <= now - self.window:
            times.popleft()
        return times

    def retry_after(self, address: str) -> float:
        """Seconds until ``address`` may try again; 0 if it may now."""
        now = time.monotonic()
        with self._lock:
            times = self._recent(address, now)
            if len(times) < self.failures:
                return 0.0
            return times[0] + self.window - now

    def failed(self, address: str) -> None:
        """Count a failed login from ``address``."""
        now = time.monotonic()
        with self._lock:
            times = self._recent(address, now)
            times.append(now)
            self._seen[address] = times
            self._seen.move_to_end(address)
            while len(self._seen) > self._addresses:
                self._seen.popitem(last=False)


def is_loopback_host(host: str) -> bool:
    """True for ``localhost``, ``*.localhost`` and loopback IP addresses."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class TokenNames:
    """How :func:`check_tokens` names the two tokens to the one who gave
    them: ``create_app``'s keyword arguments, or the command line's options."""

    token: str = "token"
    viewer: str = "viewer_token"
    give_token: str = "token=..."
    """How to give an operator token."""


#: The tokens of ``rota web`` and ``rota run``: options and environment variables.
CLI_TOKEN_NAMES = TokenNames(
    token="--token (ROTA_WEB_TOKEN)",
    viewer="--viewer-token (ROTA_WEB_VIEWER_TOKEN)",
    give_token="--token or ROTA_WEB_TOKEN",
)


def check_tokens(
    token: str | None, viewer_token: str | None, names: TokenNames = TokenNames()
) -> None:
    """Refuse (:class:`InvalidArgument`) tokens the dashboard cannot use: a
    viewer token without an operator token, the same token for both roles,
    a token under 8 characters. The message calls them by ``names``."""
    if viewer_token and not token:
        raise InvalidArgument(
            f"{names.viewer} needs an operator token as well ({names.give_token})"
        )
    if token and viewer_token and hmac.compare_digest(token, viewer_token):
        raise InvalidArgument(f"{names.token} and {names.viewer} must differ")
    for name, value in ((names.token, token), (names.viewer, viewer_token)):
        if value is not None and len(value) < 8:
            raise InvalidArgument(f"{name} must be at least 8 characters long")


def check_bind(host: str, token: str | None, users: bool = False) -> None:
    """Refuse to serve a non-loopback address without a login: an operator
    token, or user accounts (``users``: the store has at least one)."""
    if not token and not users and not is_loopback_host(host):
        raise InvalidArgument(
            f"refusing to serve the dashboard on {host!r} without a login: anyone who can "
            "reach it could steer the cluster. Add a user (rota users add NAME --role admin), "
            "pass --token (or ROTA_WEB_TOKEN), or bind 127.0.0.1"
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

    def __init__(
        self,
        token: str | None,
        viewer_token: str | None,
        secret: str | None,
        app: App | None = None,
        limiter: LoginLimiter | None = None,
    ) -> None:
        check_tokens(token, viewer_token)
        self._tokens: list[tuple[str, Role]] = []
        if token:
            self._tokens.append((token, Role.OPERATOR))
        if viewer_token:
            self._tokens.append((viewer_token, Role.VIEWER))
        #: Signs the session cookie; random per process when not given.
        self.secret = secret or secrets.token_urlsafe(32)
        self._fingerprints = {role: self._fingerprint(tok) for tok, role in self._tokens}
        self._app = app  # its users log in too; None: shared tokens only
        self.limiter = limiter or LoginLimiter()

    @property
    def open(self) -> bool:
        """True when no token is configured and the store has no user: everyone is operator."""
        return not self._tokens and not self.has_users

    @property
    def has_users(self) -> bool:
        """True when the store holds at least one user (log in by name and password)."""
        return self._app is not None and bool(self._app.store.users())

    @property
    def has_tokens(self) -> bool:
        """True when a shared token is configured (log in with it)."""
        return bool(self._tokens)

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

    def _user_fingerprint(self, user: User) -> str:
        return self._fingerprint(f"user\0{user.name}\0{user.password_hash}")

    def log_in_user(self, request: Request, name: str, password: str) -> User | None:
        """Start a session for the user if the password is theirs; None (and an
        audit entry ``user.login_failed``) if not."""
        if self._app is None:
            return None
        # who asks before a login: its entries keep only the origin and address
        # (a failure is by no one, a login by the user)
        caller = Actor("anonymous", "viewer", "web", client_address(request))
        user = self._app.admin.authenticate(name, password, by=caller)
        if user is None:
            return None
        try:
            secret, label = self._app.admin.start_session(user.name, by=caller)
        except NotFound:  # the user was removed meanwhile (a store that refuses says so)
            return None
        request.session.clear()
        request.session.update(
            user=user.name,
            auth=self._user_fingerprint(user),
            sid=secret,
            sid_label=label,
            csrf=secrets.token_urlsafe(24),
        )
        return user

    async def log_in_form(
        self, request: Request, form: Mapping[str, Any]
    ) -> tuple[str, int] | None:
        """Log in from the login form's fields (``user`` and ``password``, or
        ``token``); None on success, else the message and HTTP status to show.
        A client with too many recent failures gets 429 without a check."""
        address = client_address(request)
        wait = self.limiter.retry_after(address)
        if wait > 0:
            return f"Too many failed logins; try again in {wait:.0f} s.", 429
        name, password, token = form.get("user"), form.get("password"), form.get("token")
        if isinstance(name, str) and name and isinstance(password, str):
            try:
                ok = await asyncio.to_thread(self.log_in_user, request, name, password) is not None
            except RotaError as exc:  # the session could not be stored (a read-only store)
                return f"Your session could not be started: {exc}", 503
            wrong = "Wrong user name or password."
        else:
            ok = isinstance(token, str) and self.log_in(request, token) is not None
            wrong = "Wrong token."
        if ok:
            return None
        self.limiter.failed(address)
        await asyncio.sleep(0.25)  # slows down guessing
        return wrong, 401

    def log_out(self, request: Request) -> None:
        """End the session; a user's session token goes with it."""
        label = request.session.get("sid_label")
        identity = self._session_user(request)  # (None: the session has ended already)
        if self._app is not None and identity is not None and isinstance(label, str):
            assert identity.user is not None
            by = Actor(identity.user, identity.role.label, "web", client_address(request))
            self._app.admin.end_session(identity.user, label, by=by)
        request.session.clear()

    @staticmethod
    def csrf_token(request: Request) -> str:
        """The session's CSRF token, created on first use."""
        token = request.session.get("csrf")
        if not isinstance(token, str):
            token = secrets.token_urlsafe(24)
            request.session["csrf"] = token
        return token

    def _session_user(self, request: Request) -> Identity | None:
        name = request.session.get("user")
        fingerprint = request.session.get("auth")
        secret = request.session.get("sid")
        if (
            not isinstance(name, str)
            or not isinstance(fingerprint, str)
            or not isinstance(secret, str)
            or self._app is None
        ):
            return None
        user = self._app.admin.user_for_session(secret)
        if user is None or user.name != name:  # logged out, revoked, or not this user's
            return None
        if not hmac.compare_digest(fingerprint, self._user_fingerprint(user)):
            return None
        return Identity(_user_role(user), "session", user.name)

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
        is_open = self.open
        if is_open:
            self._check_open_request(request)
        header = request.headers.get("authorization")
        if header is not None:
            scheme, _, value = header.partition(" ")
            if scheme.lower() != "bearer" or not value.strip():
                raise Unauthorized("the Authorization header must be 'Bearer TOKEN'")
            if is_open:
                return Identity(Role.OPERATOR, "bearer", local=True)
            return self._bearer(value.strip())
        if is_open:
            via = "session" if request.session.get("csrf") else "open"
            return Identity(Role.OPERATOR, via, local=True)
        identity = self._session_user(request)
        if identity is not None:
            return identity
        role = self._session_role(request)
        if role is None:
            raise Unauthorized("log in, or send 'Authorization: Bearer TOKEN'")
        return Identity(role, "session")

    def _bearer(self, token: str) -> Identity:
        """A shared token's role, else the user whose API token it is."""
        role = self.role_for_token(token)
        if role is not None:
            return Identity(role, "bearer")
        user = self._app.admin.user_for_token(token) if self._app is not None else None
        if user is None:
            raise Unauthorized("invalid token")
        return Identity(_user_role(user), "bearer", user.name)

    @staticmethod
    def _check_open_request(request: Request) -> None:
        """Without a login only same-origin requests from this machine get in:
        the connection's peer must be a loopback address (a dashboard served on
        another address whose last user was removed stays shut), and so must the
        ``Host`` it was asked for (a page of another site that resolves its name
        to 127.0.0.1 gets nothing)."""
        peer = request.client.host if request.client is not None else None  # None: a Unix socket
        host = request.headers.get("host", "")
        if (peer is not None and not is_loopback_host(peer)) or not is_loopback_host(
            parse_host(host)
        ):
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
