"""The Lua scripts: loaded from ``lua/*.lua``, run by EVALSHA.

Each file's header lists its ``KEYS`` and ``ARGV``. ``KEYS[1]`` is always the
namespace prefix; header lines of the form ``-- KEYS[n] name: ...`` (n >= 2)
name fixed keys from :data:`keys.STATIC`, and this module passes exactly those,
in that order. The script text sent to Redis is one generated line binding
them (``local S = {name = KEYS[n], ...}``), then the library files
(:data:`LIBRARY`), then the file. Of the library's top-level functions only
those the script uses (directly or through other library functions) are sent:
Redis runs the whole chunk on every call, and defining the unused ones would
cost each call several microseconds. A script whose body calls ``library()``
gets the library wrapped in that function (which returns ``L``), so that a
way through it that needs no library function defines none.

Scripts are loaded once with SCRIPT LOAD on first use; a NOSCRIPT reply (after
SCRIPT FLUSH or a restart without persistence of the script cache) loads the
script again and repeats the call.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import redis
from redis.exceptions import NoScriptError, ResponseError

from rota.errors import InvalidArgument
from rota.stores import _checks
from rota.stores.redis._conn import Lane
from rota.stores.redis.keys import STATIC, Keys

#: Shared Lua, sent before every script in this order (later files use earlier ones).
LIBRARY = ("_base", "_ready", "_limits", "_jobs", "_claim")
#: The argument checks, sent before the library (outside ``library()``), with
#: the bounds of :mod:`rota.stores._checks` bound to Lua locals of the same names.
CHECKS = "_check"
_BOUNDS = (
    "MAX_PRIORITY",
    "MAX_COUNT",
    "MAX_LIMIT",
    "MAX_SECONDS",
    "MAX_TIME",
    "MAX_RATE",
    "MAX_BATCH",
    "FALLBACK_LEASE",
)

_STATIC_KEY = re.compile(r"^-- KEYS\[(\d+)\] (\w+):", re.MULTILINE)
_COMMENT = re.compile(r"--[^\n]*")
# what may name a library function: "L.name", "K.name", or "name(" (a local one)
_NAME = re.compile(r"(?<![\w.])([LK]\.\w+|\w+(?=\s*\())")
# a top-level library function: "function L.name(", "function K.name(" or "local function name("
_FUNCTION = re.compile(r"^(?:function ([LK]\.\w+)|local function (\w+))\(")
_INVALID = "ROTA_INVALID "

EncodableArg = bytes | str | int | float


@dataclass(frozen=True, slots=True)
class Script:
    """One script: its name, the fixed keys it takes after the prefix, its text."""

    name: str
    static: tuple[str, ...]
    text: str
    sha: str


def _header_keys(name: str, body: str) -> tuple[str, ...]:
    found = [(int(n), key) for n, key in _STATIC_KEY.findall(body) if int(n) >= 2]
    numbers = [n for n, _ in found]
    if numbers != list(range(2, len(found) + 2)):
        raise RuntimeError(f"{name}.lua: KEYS in the header must be numbered 2, 3, ...")
    for _, key in found:
        if key not in STATIC:
            raise RuntimeError(f"{name}.lua: KEYS names unknown fixed key {key!r}")
    return tuple(key for _, key in found)


def _names(code: str) -> set[str]:
    """The library function names ``code`` may use: ``L.x``, ``K.x``, and ``x(``."""
    return set(_NAME.findall(_COMMENT.sub("", code)))


def _library(lib: str, body: str) -> str:
    """The library text without the top-level functions ``body`` does not need.

    A function spans from its ``function`` line to the first line that is just
    ``end`` (or is that one line when it ends with `` end``); everything else
    (locals, comments) is kept. A function is needed when the script or a
    needed function's code (comments aside) names it.
    """
    lines = lib.split("\n")
    parts: list[tuple[str | None, str]] = []  # (function name, text), in order
    i = 0
    while i < len(lines):
        match = _FUNCTION.match(lines[i])
        if match is None:
            parts.append((None, lines[i]))
            i += 1
            continue
        j = i
        if not lines[i].rstrip().endswith(" end"):
            j = lines.index("end", i + 1)
        parts.append((match.group(1) or match.group(2), "\n".join(lines[i : j + 1])))
        i = j + 1
    defined = {fn: text for fn, text in parts if fn is not None}
    if len(defined) != sum(fn is not None for fn, _ in parts):
        raise RuntimeError("the Lua library defines a top-level function twice")
    needed: set[str] = set()
    pending = [body, *(text for fn, text in parts if fn is None)]
    while pending:
        for fn in _names(pending.pop()) & defined.keys() - needed:
            needed.add(fn)
            pending.append(defined[fn])
    return "\n".join(text for fn, text in parts if fn is None or fn in needed)


@cache
def load(name: str) -> Script:
    """The script ``lua/NAME.lua``, ready to send."""
    folder = resources.files(__package__).joinpath("lua")
    return assemble(name, folder.joinpath(f"{name}.lua").read_text())


def assemble(name: str, body: str) -> Script:
    """The script ``name`` whose own text is ``body``, ready to send: its fixed
    keys bound, then the checks and library functions it uses, then ``body``.

    :func:`load` builds every ``lua/`` script with it; a script kept elsewhere
    (a test harness calling library functions directly) is built the same way.
    """
    folder = resources.files(__package__).joinpath("lua")
    lib = _library("\n".join(folder.joinpath(f"{part}.lua").read_text() for part in LIBRARY), body)
    checks = _library(folder.joinpath(f"{CHECKS}.lua").read_text(), f"{lib}\n{body}")
    if "library()" in body:
        lib = f"local function library()\n{lib}\nreturn L\nend"
    static = _header_keys(name, body)
    binds = ", ".join(f"{key} = KEYS[{i}]" for i, key in enumerate(static, start=2))
    values = ", ".join(repr(getattr(_checks, bound)) for bound in _BOUNDS)
    text = (
        f"local S = {{{binds}}}\nlocal {', '.join(_BOUNDS)} = {values}\n{checks}\n"
        f"{lib}\n-- {name}.lua\n{body}"
    )
    return Script(name, static, text, hashlib.sha1(text.encode()).hexdigest())


def names() -> list[str]:
    """Every script name (the ``.lua`` files other than the library's)."""
    folder = resources.files(__package__).joinpath("lua")
    return sorted(
        entry.name[:-4]
        for entry in folder.iterdir()
        if entry.name.endswith(".lua") and not entry.name.startswith("_")
    )


class Scripts:
    """Runs the scripts for one namespace on one client."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._client = client
        self._lane = Lane(client)
        self._keys = keys
        self._fixed: dict[str, list[str]] = {}  # script name -> its KEYS before the extra ones
        self._loaded = False
        self._lock = threading.Lock()

    def load_all(self) -> None:
        """SCRIPT LOAD every script in one round trip."""
        pipe = self._client.pipeline(transaction=False)
        for name in names():
            pipe.script_load(load(name).text)
        pipe.execute()
        self._loaded = True

    def close(self) -> None:
        """Close the connections of script calls."""
        self._lane.close()

    def keys_for(self, name: str, extra: Sequence[str] = ()) -> list[str]:
        """The KEYS a call of ``name`` passes: the prefix, its fixed keys, ``extra``."""
        fixed = self._fixed.get(name)
        if fixed is None:
            fixed = [self._keys.prefix, *(self._keys.static(k) for k in load(name).static)]
            self._fixed[name] = fixed
        return [*fixed, *extra]

    def run(
        self, name: str, args: Sequence[EncodableArg] = (), extra_keys: Sequence[str] = ()
    ) -> Any:
        """Run one script; a ``ROTA_INVALID`` error becomes :class:`InvalidArgument`."""
        script = load(name)
        if not self._loaded:
            with self._lock:
                if not self._loaded:
                    self.load_all()
        keys = self.keys_for(name, extra_keys)
        try:
            try:
                return self._lane.call("EVALSHA", script.sha, len(keys), *keys, *args)
            except NoScriptError:
                self._client.script_load(script.text)
                return self._lane.call("EVALSHA", script.sha, len(keys), *keys, *args)
        except ResponseError as exc:
            message = str(exc)
            if message.startswith(_INVALID):
                # Redis appends where a script raised: " script: SHA, on @user_script:N."
                message = message[len(_INVALID) :].rsplit(" script: ", 1)[0]
                raise InvalidArgument(message) from None
            raise
