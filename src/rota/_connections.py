"""The database connection a job is sent in (``task.send(..., connection=)``):
a driver's own, or the one a SQLAlchemy ``Connection`` or ``Session`` or a
Django connection wraps, told apart by shape: rota imports none of them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rota import _validate
from rota.errors import InvalidArgument

__all__ = ["dbapi_connection", "transaction_of"]


def transaction_of(kwargs: dict[str, Any], takes_connection: Callable[[], bool]) -> Any:
    """Take a ``connection`` keyword that holds a database connection out of
    a call's keyword arguments and return it (None when there is none). No
    job argument can be a connection: it is not JSON. ``connection=None``
    (``conn if in_transaction else None``) means no transaction, unless the
    task's function takes a ``connection`` argument (``takes_connection()``)."""
    value = kwargs.get("connection")
    if value is None:
        if "connection" in kwargs and not takes_connection():
            del kwargs["connection"]
        return None
    if isinstance(value, str | bytes | int | float | list | dict | tuple):
        return None
    connection = dbapi_connection(value)
    if connection is None:
        if _is_engine(value) and not takes_connection():
            raise InvalidArgument(
                "connection= takes a connection or a session with its transaction, not an "
                "Engine: `with engine.begin() as conn: task.send(..., connection=conn)`"
            )
        if takes_connection():
            return None  # the task's own argument (and refused as not JSON)
        raise InvalidArgument(
            "connection= takes an open database connection (psycopg, mysqlclient, PyMySQL, "
            "Connector/Python), a SQLAlchemy Connection or Session, or Django's, not "
            f"{_validate.type_name(value)}"
        )
    del kwargs["connection"]
    return connection


def _is_engine(value: object) -> bool:
    """Whether ``value`` is a SQLAlchemy ``Engine`` (a pool of connections,
    none of them in a transaction of the caller's)."""
    return type(value).__name__ == "Engine" and callable(getattr(value, "begin", None))


def dbapi_connection(value: object) -> Any:
    """The database connection ``value`` is, or that SQLAlchemy or Django
    wraps in it (a pooled connection; a ``Connection``; a ``Session``: its
    connection, in its transaction; Django's: see :func:`_django_connection`);
    None when it is none of these."""
    if _is_django(value):
        return _django_connection(value)
    found = getattr(value, "dbapi_connection", None)  # a pooled connection's
    kind = "pooled connection"
    if found is None:
        if callable(getattr(value, "cursor", None)):
            return value  # the driver's own (psycopg's, mysqlclient's)
        kind = "Connection"
        try:
            if callable(getattr(value, "get_bind", None)):
                kind = "Session"
                value = value.connection()  # type: ignore[attr-defined]  # a Session's
            found = getattr(getattr(value, "connection", None), "dbapi_connection", None)
        except Exception:  # a closed Connection or Session: not a connection to send in
            return None
    if not callable(getattr(found, "cursor", None)):
        return None
    if _psycopg_autocommit_outside_transaction(found):
        raise InvalidArgument(
            f"connection is a SQLAlchemy {kind} in autocommit mode "
            "(isolation_level='AUTOCOMMIT') with no open transaction, where the job would be "
            "stored at once (SQLAlchemy's begin() opens no database transaction in that "
            "mode): send on a connection of an engine without AUTOCOMMIT, inside `with "
            "engine.begin() as conn:` (or after `conn.begin()`; a Session: inside `with "
            "session.begin():`), or without connection="
        )
    return found


def _psycopg_autocommit_outside_transaction(driver: Any) -> bool:
    """Whether ``driver`` is a psycopg connection in autocommit mode with no
    transaction open, where a job sent would be stored at once (the store
    refuses it too, naming psycopg's ``conn.transaction()``; a SQLAlchemy
    connection is refused here, naming SQLAlchemy's way). A MySQL driver's
    connection is left to the store, which asks the server."""
    status = getattr(getattr(driver, "info", None), "transaction_status", None)
    return getattr(driver, "autocommit", None) is True and getattr(status, "name", "") == "IDLE"


def _is_django(value: object) -> bool:
    """Whether ``value`` is a Django database connection (a ``DatabaseWrapper``,
    ``connections["alias"]``, or ``django.db.connection``, the proxy to the
    default one), told by its shape: rota does not import Django."""
    return callable(getattr(value, "ensure_connection", None)) and isinstance(
        getattr(value, "settings_dict", None), dict
    )


def _django_connection(wrapper: Any) -> Any:
    """The driver's connection under a Django ``wrapper``, in the transaction
    of the caller's ``transaction.atomic()`` block. Refused, saying why: one
    in autocommit mode (outside any atomic block), as rota refuses a driver's
    connection in autocommit, since its jobs would be stored at once; an
    atomic block marked for rollback, where Django runs no statement; one on
    psycopg2, which no store takes."""
    name = f"Django's connection {wrapper.alias!r}"
    if wrapper.get_autocommit():  # (it connects first)
        raise InvalidArgument(
            f"connection is {name} in autocommit mode (outside transaction.atomic()), where "
            "the job would be stored at once: send inside `with transaction.atomic():`, or "
            "without connection="
        )
    if wrapper.needs_rollback:
        raise InvalidArgument(
            f"connection is {name} in an atomic block marked for rollback (a statement in it "
            "raised an error, or set_rollback(True)): send in an atomic block that can commit"
        )
    driver = wrapper.connection
    if type(driver).__module__.startswith("psycopg2"):
        raise InvalidArgument(
            f"connection is {name} on psycopg2, but rota sends in a transaction of psycopg 3 "
            "only: Django 4.2 and later use psycopg 3 when it is installed (rota[postgres] "
            "installs it)"
        )
    return driver
