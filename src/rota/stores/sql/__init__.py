"""rota's SQL engine: the store logic every SQL database shares.

The claim selection, the limit book (concurrency, rate, breaker), parking,
unique keys, the finish/release/recover bookkeeping, steering, schedules and
inspection are written once here, against :class:`~rota.stores.sql.tx.Tx`: a
connection that runs *named* queries. A dialect (``stores/sqlite``, and the
server databases) supplies the connections, the transactions, the store clock,
wake-ups, and one set of ``.sql`` files holding every statement under its name.
No SQL text lives in Python.
"""
