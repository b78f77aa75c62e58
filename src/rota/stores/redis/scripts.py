"""The Lua code: one Redis Functions library built from ``lua/*.lua``, run by FCALL.

Each script file's header lists its ``KEYS`` and ``ARGV``. ``KEYS[1]`` is
always the namespace prefix; header lines of the form ``-- KEYS[n] name: ...``
(n >= 2) name fixed keys from :data:`keys.STATIC`, and this module passes
exactly those, in that order.

Every script becomes one function of a single library: the argument checks
(:data:`CHECKS`), the shared files (:data:`LIBRARY`), then each script's body
wrapped in a function registered as ``<library>_<script>``. Redis compiles the
library once, at ``FUNCTION LOAD``, so a call runs only its own script's work
(an ``EVALSHA`` chunk defined every library function on each call, which cost
more than a small call's work). The library's name carries a hash of its text:
two rota versions sharing a Redis each call their own functions.

Each call binds the script's keys and arguments to the library's ``KEYS``,
``ARGV``, ``PREFIX`` and ``S`` (the fixed keys by name) before running its
body; Redis runs one call at a time, so the library's functions see the
caller's. A call that finds no library (``Function not found``: a server that
never had this version's, or lost it to ``FUNCTION FLUSH`` or a restart that
kept no data) loads it and is repeated.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import redis
from redis.exceptions import ResponseError

from rota.errors import InvalidArgument
from rota.stores import _checks
from rota.stores.redis._conn import Lane
from rota.stores.redis.keys import STATIC, Keys

#: Shared Lua, in this order (later files use earlier ones).
LIBRARY = ("_base", "_ready", "_limits", "_jobs", "_claim")
#: The argument checks, before the library, with the bounds of
#: :mod:`rota.stores._checks` bound to Lua locals of the same names.
CHECKS = "_check"
_BOUNDS = (
    "MAX_PRIORITY",
    "MAX_COUNT",
    "MAX_LIMIT",
    "MAX_SECONDS",
    "MIN_TIME",
    "MAX_TIME",
    "MAX_RATE",
    "MAX_BATCH",
    "FALLBACK_LEASE",
)

_STATIC_KEY = re.compile(r"^-- KEYS\[(\d+)\] (\w+):", re.MULTILINE)
_INVALID = "ROTA_INVALID "
_MISSING = "Function not found"

EncodableArg = bytes | str | int | float


@dataclass(frozen=True, slots=True)
class Library:
    """The scripts as one Redis Functions library: its name, its text, and
    the fixed keys each script takes after the prefix."""

    name: str
    text: str
    static: Mapping[str, tuple[str, ...]]

    def function(self, script: str) -> str:
        """The name under which ``script`` is registered."""
        return f"{self.name}_{script}"


def _header_keys(name: str, body: str) -> tuple[str, ...]:
    found = [(int(n), key) for n, key in _STATIC_KEY.findall(body) if int(n) >= 2]
    numbers = [n for n, _ in found]
    if numbers != list(range(2, len(found) + 2)):
        raise RuntimeError(f"{name}.lua: KEYS in the header must be numbered 2, 3, ...")
    for _, key in found:
        if key not in STATIC:
            raise RuntimeError(f"{name}.lua: KEYS names unknown fixed key {key!r}")
    return tuple(key for _, key in found)


def _source(name: str) -> str:
    return resources.files(__package__).joinpath("lua", f"{name}.lua").read_text()


# Registers a script's body under NAME_<script>; each call first binds the
# keys and arguments the library's functions read (PREFIX is _base.lua's).
_BINDING = """
local function register(script, fixed, body)
  redis.register_function(NAME .. '_' .. script, function(keys, args)
    KEYS, ARGV, PREFIX, S = keys, args, keys[1], {}
    for i, key in ipairs(fixed) do S[key] = keys[i + 1] end
    return body()
  end)
end
"""


def build(bodies: Mapping[str, str]) -> Library:
    """A library registering each script of ``bodies`` (name -> its own text).

    :func:`library` builds rota's from every ``lua/`` script; a script kept
    elsewhere (a test harness calling library functions directly) is built
    the same way, into a library of its own.
    """
    static = {name: _header_keys(name, body) for name, body in bodies.items()}
    values = ", ".join(repr(getattr(_checks, bound)) for bound in _BOUNDS)
    parts = [
        "local KEYS, ARGV, S",
        f"local {', '.join(_BOUNDS)} = {values}",
        _source(CHECKS),
        *(_source(part) for part in LIBRARY),
        _BINDING,
    ]
    for name, body in bodies.items():
        fixed = ", ".join(f"'{key}'" for key in static[name])
        parts.append(f"-- {name}.lua\nregister('{name}', {{{fixed}}}, function()\n{body}\nend)")
    text = "\n".join(parts)
    name = "rota_" + hashlib.sha1(text.encode()).hexdigest()[:16]
    header = f"#!lua name={name}\nlocal NAME = '{name}'\n"
    return Library(name, header + text, static)


def names() -> list[str]:
    """Every script name (the ``.lua`` files other than the library's)."""
    folder = resources.files(__package__).joinpath("lua")
    return sorted(
        entry.name[:-4]
        for entry in folder.iterdir()
        if entry.name.endswith(".lua") and not entry.name.startswith("_")
    )


@cache
def library() -> Library:
    """rota's library: every ``lua/`` script."""
    return build({name: _source(name) for name in names()})


def load(client: redis.Redis, lib: Library) -> None:
    """Load ``lib`` into the server unless it is there already."""
    try:
        client.function_load(lib.text)
    except ResponseError as exc:
        if "already exists" not in str(exc):
            raise


class Scripts:
    """Runs the scripts for one namespace on one client."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._client = client
        self._lane = Lane(client)
        self._keys = keys
        self._fixed: dict[str, list[str]] = {}  # script name -> its KEYS before the extra ones

    def close(self) -> None:
        """Close the connections of script calls."""
        self._lane.close()

    def keys_for(self, name: str, extra: Sequence[str] = ()) -> list[str]:
        """The KEYS a call of ``name`` passes: the prefix, its fixed keys, ``extra``."""
        fixed = self._fixed.get(name)
        if fixed is None:
            static = library().static[name]
            fixed = [self._keys.prefix, *(self._keys.static(k) for k in static)]
            self._fixed[name] = fixed
        return [*fixed, *extra]

    def run(
        self, name: str, args: Sequence[EncodableArg] = (), extra_keys: Sequence[str] = ()
    ) -> Any:
        """Run one script; a ``ROTA_INVALID`` error becomes :class:`InvalidArgument`."""
        lib = library()
        keys = self.keys_for(name, extra_keys)
        call = ("FCALL", lib.function(name), len(keys), *keys, *args)
        try:
            try:
                return self._lane.call(*call)
            except ResponseError as exc:
                if not str(exc).startswith(_MISSING):
                    raise
                load(self._client, lib)
                return self._lane.call(*call)
        except ResponseError as exc:
            message = str(exc)
            if message.startswith(_INVALID):
                # Redis appends where a script raised: " script: NAME, on @user_function: N."
                message = message[len(_INVALID) :].rsplit(" script: ", 1)[0]
                raise InvalidArgument(message) from None
            raise
