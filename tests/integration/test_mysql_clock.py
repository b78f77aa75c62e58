"""A worker and a scheduler whose clocks are an hour off, on MySQL / MariaDB:
the store's clock (``NOW(6)``) is the only one that counts. The same test as
for the other stores, collected here again with the MySQL backend."""

from __future__ import annotations

from backends import mysql_only  # noqa: F401 (the backend fixture: MySQL only)
from integration.test_chaos_clock import (  # noqa: F401 (collected with the MySQL backend)
    shared_clock,
    skew,
    test_skewed_clocks_do_not_show,
)
