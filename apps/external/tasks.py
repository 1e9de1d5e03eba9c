"""Celery tasks of external operators: triggers only."""

from celery import shared_task

from . import services


@shared_task
def finish_rotations() -> int:
    """Beat: end the rotations whose old endpoint drained (the engine's hook does it at once; this
    catches one whose hook was lost with its process)."""
    return services.finish_drained_rotations()
