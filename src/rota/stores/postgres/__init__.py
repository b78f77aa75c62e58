"""The PostgreSQL store (the ``rota[postgres]`` extra)."""

from rota.stores.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
