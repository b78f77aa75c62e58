"""Scheduling: triggers and the pure arithmetic of when schedules fire."""

from rota.scheduling.triggers import (
    FirePlan,
    Trigger,
    at,
    cron,
    every,
    jitter_offset,
    plan_fires,
    trigger_from_json,
)

__all__ = [
    "FirePlan",
    "Trigger",
    "at",
    "cron",
    "every",
    "jitter_offset",
    "plan_fires",
    "trigger_from_json",
]
