"""The MySQL / MariaDB store (the ``rota[mysql]`` extra)."""

from rota.stores.mysql.store import MySQLStore

__all__ = ["MySQLStore"]
