"""The embedded SQLite store."""

from rota.stores.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
