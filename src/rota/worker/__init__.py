"""The worker: ``Worker(app, queues=[...], concurrency=8, mode="threads").run()``."""

from rota.worker.worker import Worker

__all__ = ["Worker"]
