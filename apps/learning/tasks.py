"""Celery tasks of self-learning: ids in, a service call; no logic here."""

from celery import shared_task

from . import services


@shared_task(acks_late=True)
def run_tuning_cycle(cycle_id: int) -> None:
    services.run_cycle(cycle_id=cycle_id)


@shared_task(acks_late=True)
def propose_wish(wish_id: int) -> None:
    services.make_wish_proposal(wish_id=wish_id)


@shared_task
def queue_due_cycles() -> int:
    return services.queue_due_cycles()
