"""Reads of automation rules and their run log."""

from __future__ import annotations

from django.db.models import QuerySet

from apps.core.models import Widget

from .models import RUNS_KEPT, AutomationRule, AutomationRun


def list_rules(widget: Widget) -> QuerySet[AutomationRule]:
    return AutomationRule.objects.filter(widget=widget).order_by("id")


def get_rule(*, widget: Widget, rule_id: int) -> AutomationRule | None:
    return AutomationRule.objects.filter(widget=widget, pk=rule_id).first()


def list_runs(*, widget: Widget, rule: AutomationRule) -> list[AutomationRun]:
    """The rule's newest RUNS_KEPT runs, newest first (the beat job `automation.trim_runs` cuts the tail)."""
    return list(AutomationRun.objects.filter(widget=widget, rule=rule).order_by("-id")[:RUNS_KEPT])
