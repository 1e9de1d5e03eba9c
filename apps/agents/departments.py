"""Departments: groups of agents serving some channels on a week's schedule (re-exported by
apps.agents.services, the app's one public face for writes)."""

from __future__ import annotations

from django.db import transaction

from apps.audit import services as audit
from apps.core.models import Widget

from .models import Agent, Department

DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def full_week(schedule: dict | None = None, *, default=None) -> dict:
    """All seven days in order; a day missing from `schedule` gets `default`."""
    schedule = schedule or {}
    return {day: schedule.get(day, default) for day in DAYS}


def _check_agents(widget: Widget, agents: list[Agent]) -> None:
    assert all(agent.widget_id == widget.pk for agent in agents), "agents must belong to the widget"


@transaction.atomic
def create_department(
    *,
    widget: Widget,
    name: str,
    channels: list[str] | None = None,
    agents: list[Agent] | None = None,
    schedule: dict | None = None,
) -> Department:
    """A department. Without `schedule` it is open every day (`full`); with one, an omitted day
    is closed (as on PUT /schedule)."""
    _check_agents(widget, agents or [])
    department = Department.objects.create(
        widget=widget,
        name=name,
        channels=list(channels or []),
        schedule=full_week(schedule) if schedule is not None else full_week(default="full"),
    )
    if agents:
        department.agents.set(agents)
    _audit_department(widget, department.pk, None, _department_values(department))
    return department


DEPARTMENT_AUDIT = "department"  # audit rows: department.created, .changed, .deleted


def _department_values(department: Department) -> dict:
    return {**audit.values(department), "agent_ids": sorted(department.agents.values_list("pk", flat=True))}


def _audit_department(widget: Widget, pk: int, before: dict | None, after: dict | None) -> None:
    audit.record_row(widget=widget, target_type=DEPARTMENT_AUDIT, target_id=pk, before=before, after=after)


@transaction.atomic
def update_department(*, widget: Widget, department: Department, name: str | None = None, channels=None) -> Department:
    department = Department.objects.select_for_update().get(pk=department.pk, widget=widget)
    before = _department_values(department)
    fields = ["updated_at"]
    if name is not None:
        department.name = name
        fields.append("name")
    if channels is not None:
        department.channels = list(channels)
        fields.append("channels")
    department.save(update_fields=fields)
    _audit_department(widget, department.pk, before, _department_values(department))
    return department


@transaction.atomic
def delete_department(*, widget: Widget, department: Department) -> None:
    """Delete the department; chats it already produced stay (their department becomes null)."""
    department = Department.objects.select_for_update().filter(pk=department.pk, widget=widget).first()
    if department is None:
        return
    before, pk = _department_values(department), department.pk
    department.delete()
    _audit_department(widget, pk, before, None)


@transaction.atomic
def set_department_agents(*, widget: Widget, department: Department, agents: list[Agent]) -> Department:
    """Replace the agent set (empty empties it). Suspended agents may be members."""
    _check_agents(widget, agents)
    department = Department.objects.select_for_update().get(pk=department.pk, widget=widget)
    before = _department_values(department)
    department.agents.set(agents)
    department.save(update_fields=["updated_at"])
    _audit_department(widget, department.pk, before, _department_values(department))
    return department


@transaction.atomic
def set_department_schedule(*, widget: Widget, department: Department, schedule: dict) -> Department:
    """Replace the week; an omitted day is closed."""
    department = Department.objects.select_for_update().get(pk=department.pk, widget=widget)
    before = _department_values(department)
    department.schedule = full_week(schedule)
    department.save(update_fields=["schedule", "updated_at"])
    _audit_department(widget, department.pk, before, _department_values(department))
    return department
