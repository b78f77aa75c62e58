"""Find the :class:`~rota.App` a command line names: ``module:attribute`` or ``file.py:attribute``.

``rota worker demo.py:app`` imports ``demo.py`` as the module ``demo`` with its
directory first on ``sys.path``, exactly as ``import demo`` would from that
directory. A sender that does ``import demo`` and a worker that loads
``demo.py:app`` therefore define the same tasks under the same names (task
names are the functions' ``__qualname__`` unless ``name=`` was given, so they
do not depend on the module's name either).

The attribute defaults to ``app``: ``rota worker demo`` means ``demo:app``.
Every problem with the spec raises :class:`~rota.errors.InvalidArgument` with
a message that says what to fix; a module that fails to import (syntax error,
missing dependency, an exception in its code) raises :class:`AppImportError`,
which names the file and line in a few lines and chains the original error.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from pathlib import Path
from types import ModuleType

from rota.app import App
from rota.errors import InvalidArgument, StoreError

__all__ = ["DEFAULT_ATTRIBUTE", "AppImportError", "load_app"]

#: The attribute looked up when a spec names only a module or a file.
DEFAULT_ATTRIBUTE = "app"


def load_app(spec: str) -> App:
    """Import the module or file ``spec`` names and return its :class:`~rota.App`.

    Accepted forms: ``package.module:attribute``, ``path/to/file.py:attribute``,
    and either without ``:attribute`` (then ``app``). The attribute may be
    dotted (``module:container.app``). The current directory is put on
    ``sys.path`` for module specs, as ``python -m`` would.
    """
    target, attribute = _split(spec)
    if _is_file(target):
        module = _import_file(Path(target))
    else:
        _put_cwd_on_path()
        module = _import_module(target)
    return _get_app(module, attribute, spec)


def _split(spec: str) -> tuple[str, str]:
    spec = spec.strip()
    if not spec:
        raise InvalidArgument("empty app spec; use module:attribute or path/to/file.py:attribute")
    target, colon, attribute = spec.rpartition(":")
    if not colon or _looks_like_drive(target):
        # No attribute given ("demo", "demo.py"), or a Windows path "C:\demo.py".
        return spec, DEFAULT_ATTRIBUTE
    if not target:
        raise InvalidArgument(f"app spec {spec!r} names no module before ':'")
    if not attribute:
        raise InvalidArgument(f"app spec {spec!r} names no attribute after ':'")
    return target, attribute


def _looks_like_drive(target: str) -> bool:
    return len(target) == 1 and target.isalpha()


def _is_file(target: str) -> bool:
    return target.endswith(".py") or "/" in target or os.sep in target


def _import_file(path: Path) -> ModuleType:
    if path.suffix != ".py":
        raise InvalidArgument(f"app file {str(path)!r} is not a Python file (.py)")
    if not path.is_file():
        raise InvalidArgument(f"app file {str(path)!r} not found")
    path = path.resolve()
    name = path.stem
    if not name.isidentifier():
        raise InvalidArgument(
            f"app file {str(path)!r} cannot be imported as a module: "
            f"{name!r} is not a valid module name"
        )
    directory = str(path.parent)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    module = _import_module(name)
    origin = getattr(module, "__file__", None)
    if origin is None or Path(origin).resolve() != path:
        raise InvalidArgument(
            f"cannot import {str(path)!r} as module {name!r}: a different module of that "
            f"name is already imported ({origin or 'built in'}); rename the file"
        )
    return module


def _put_cwd_on_path() -> None:
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)


class AppImportError(InvalidArgument):
    """The app's module was found but raised while it was imported; the
    original exception is the ``__cause__``. A :class:`StoreError` raised
    by the store the module opened is raised as it is."""


def _import_module(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing == name or name.startswith(missing + "."):
            raise InvalidArgument(
                f"module {name!r} not found (looked in the current directory and sys.path)"
            ) from None
        raise AppImportError(
            f"importing {name!r} failed: no module named {missing!r}{_where(exc)}"
        ) from exc
    except SyntaxError as exc:
        line = f"\n    {exc.text.rstrip()}" if exc.text and exc.text.strip() else ""
        raise AppImportError(
            f"importing {name!r} failed: {type(exc).__name__}: {exc.msg} "
            f"({exc.filename}, line {exc.lineno}){line}"
        ) from exc
    except StoreError:
        # the store the module opened as it was imported (App.schedule at
        # import) refused it or cannot be reached: the store's error, not
        # the module's
        raise
    except Exception as exc:
        first = str(exc).strip().splitlines()
        text = f"{type(exc).__name__}: {first[0]}" if first else type(exc).__name__
        raise AppImportError(f"importing {name!r} failed: {text}{_where(exc)}") from exc


def _where(exc: BaseException) -> str:
    """`` (file, line N)``: the innermost frame of the traceback outside the
    import machinery and this module, or nothing."""
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if "importlib" not in f.filename and f.filename != __file__
    ]
    return f" ({frames[-1].filename}, line {frames[-1].lineno})" if frames else ""


def _get_app(module: ModuleType, attribute: str, spec: str) -> App:
    value: object = module
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            found = _apps_in(module)
            hint = f"; it has {', '.join(found)}" if found else ""
            raise InvalidArgument(
                f"module {module.__name__!r} has no attribute {attribute!r}{hint}"
            ) from None
    if not isinstance(value, App):
        raise InvalidArgument(
            f"{spec!r} is a {type(value).__name__}, not a rota App; "
            "point at the object created with rota.App(...)"
        )
    return value


def _apps_in(module: ModuleType) -> list[str]:
    """Names of the module's attributes that are apps, for a helpful error."""
    return sorted(
        f"{module.__name__}:{name}"
        for name, value in vars(module).items()
        if isinstance(value, App)
    )
