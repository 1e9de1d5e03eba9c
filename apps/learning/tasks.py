"""Celery tasks of self-learning: ids in, a service call (the bulk ones in the widget's bulk slot, apps.core.bulk)."""

from celery import shared_task

from apps.core import bulk

from . import services
from .models import TuningCycle, Wish


@shared_task(bind=True, acks_late=True)
def run_tuning_cycle(self, cycle_id: int) -> None:
    """On the `bulk` queue (CELERY_TASK_ROUTES), in one of the widget's bulk slots (apps.core.bulk)."""
    widget_id = TuningCycle.objects.filter(pk=cycle_id).values_list("widget_id", flat=True).first()
    if widget_id is None:
        return
    with bulk.widget_turn(self, widget_id):
        services.run_cycle(cycle_id=cycle_id)


@shared_task(bind=True, acks_late=True)
def propose_wish(self, wish_id: int) -> None:
    """On the `bulk` queue, in one of the widget's bulk slots."""
    widget_id = Wish.objects.filter(pk=wish_id).values_list("widget_id", flat=True).first()
    if widget_id is None:
        return
    with bulk.widget_turn(self, widget_id):
        services.make_wish_proposal(wish_id=wish_id)


@shared_task
def queue_due_cycles() -> int:
    return services.queue_due_cycles()
