"""The rules' worker task: handed one event after its change committed (apps.automation.handlers)."""

from __future__ import annotations

from celery import shared_task

from . import runtime, services


@shared_task(name="apps.automation.tasks.run_rules", ignore_result=True)
def run_rules(widget_id: int, event_type: str, data: dict) -> int:
    """Run the widget's rules of `event_type` for this event; returns how many rules were evaluated."""
    return len(runtime.run_event(widget_id=widget_id, event_type=event_type, data=data).rule_ids)


@shared_task(name="apps.automation.tasks.trim_runs", ignore_result=True)
def trim_runs() -> int:
    """The beat job: every rule's run log back to its newest RUNS_KEPT; returns how many evaluations went."""
    return services.trim_runs()
