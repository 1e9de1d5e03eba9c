"""The rules' worker task: handed one event after its change committed (apps.automation.handlers)."""

from __future__ import annotations

from celery import shared_task

from . import runtime


@shared_task(name="apps.automation.tasks.run_rules", ignore_result=True)
def run_rules(widget_id: int, event_type: str, data: dict) -> int:
    """Run the widget's rules of `event_type` for this event; returns how many rules were evaluated."""
    return len(runtime.run_event(widget_id=widget_id, event_type=event_type, data=data))
