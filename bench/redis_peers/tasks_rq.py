"""The no-op task for RQ."""


def noop(i: int) -> int:
    """Do nothing; return the argument."""
    return i
