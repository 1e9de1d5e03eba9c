"""Writes of automation rules and of their run log. Every rule the API states is enforced here, so
the REST routes, the owner's console page and the admin share one set of rules and messages; every
write changes the widget's rule-set version in its transaction (the workers load the rules again)
and is audited (`automation_rule.created`, `.changed`, `.deleted`)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Count, OuterRef, Subquery
from django.utils import timezone

from apps.audit import services as audit
from apps.core.errors import ValidationFailed
from apps.core.models import Widget

from . import actions as engine
from .conditions import validate_conditions
from .models import EVENTS, RUNS_KEPT, AutomationRule, AutomationRun, RuleSet, new_version
from .webhook import check_webhook_actions

AUDIT = "automation_rule"
MAX_RULES = 200


def bump(widget_id: int) -> None:
    """A write to the widget's rules: every worker loads them again on its next event."""
    if not RuleSet.objects.filter(widget_id=widget_id).update(version=new_version()):
        RuleSet.objects.get_or_create(widget_id=widget_id)


def validate_rule(*, widget: Widget, data: dict[str, Any]) -> dict[str, Any]:
    """The members of `data` checked and normalised (conditions, actions); ValidationFailed with
    every member's messages otherwise."""
    clean: dict[str, Any] = {}
    errors: dict[str, list[str]] = {}
    if "event" in data:
        if data["event"] not in EVENTS:
            errors["event"] = [f"One of: {', '.join(EVENTS)}."]
        else:
            clean["event"] = data["event"]
    if "conditions" in data:
        try:
            clean["conditions"] = validate_conditions(data["conditions"])
        except ValidationFailed as exc:
            errors.update(exc.errors or {})
    if "actions" in data:
        try:
            normalised = engine.validate_actions(widget=widget, actions=data["actions"], allow_webhook=True)
            check_webhook_actions(widget=widget, actions=normalised)
            clean["actions"] = normalised
        except ValidationFailed as exc:
            errors.update(exc.errors or {})
    if errors:
        raise ValidationFailed(errors=errors)
    for name in ("name", "enabled"):
        if name in data:
            clean[name] = data[name]
    return clean


@transaction.atomic
def create_rule(
    *, widget: Widget, name: str, event: str, conditions: list, actions: list, enabled: bool = True
) -> AutomationRule:
    data = validate_rule(
        widget=widget,
        data={"name": name, "event": event, "conditions": conditions, "actions": actions, "enabled": enabled},
    )
    if AutomationRule.objects.filter(widget=widget).count() >= MAX_RULES:
        raise ValidationFailed(errors={"name": [f"A widget has at most {MAX_RULES} rules."]})
    rule = AutomationRule.objects.create(widget=widget, **data)
    bump(widget.pk)
    audit.record_row(widget=widget, target_type=AUDIT, target_id=rule.pk, before=None, after=audit.values(rule))
    return rule


@transaction.atomic
def update_rule(*, widget: Widget, rule: AutomationRule, changes: dict[str, Any]) -> AutomationRule:
    """Merge `changes` (any of name, enabled, event, conditions, actions) into the rule."""
    assert rule.widget_id == widget.pk
    data = validate_rule(widget=widget, data=changes)
    row = AutomationRule.objects.select_for_update().get(pk=rule.pk, widget=widget)
    before = audit.values(row)
    for name, value in data.items():
        setattr(row, name, value)
    row.updated_at = timezone.now()
    row.save()
    bump(widget.pk)
    audit.record_row(widget=widget, target_type=AUDIT, target_id=row.pk, before=before, after=audit.values(row))
    return row


@transaction.atomic
def delete_rule(*, widget: Widget, rule: AutomationRule) -> None:
    assert rule.widget_id == widget.pk
    row = AutomationRule.objects.select_for_update().filter(pk=rule.pk, widget=widget).first()
    if row is None:
        return
    before = audit.values(row)
    row.delete()
    bump(widget.pk)
    audit.record_row(widget=widget, target_type=AUDIT, target_id=rule.pk, before=before, after=None)


# --- the run log ------------------------------------------------------------------------------------


def record_runs(runs: list[AutomationRun]) -> None:
    """Store the runs of one event (one statement). The beat job `automation.trim_runs` cuts each
    rule's log back to RUNS_KEPT, off the event's path; the API reads the newest RUNS_KEPT."""
    if runs:
        AutomationRun.objects.bulk_create(runs)


def trim_runs(*, rule_ids: list[int] | None = None) -> int:
    """Delete the runs of these rules (every rule with more than RUNS_KEPT runs when None) beyond
    each one's newest RUNS_KEPT; returns how many went."""
    if rule_ids is None:
        rule_ids = list(
            AutomationRun.objects.order_by()
            .values("rule_id")
            .annotate(n=Count("id"))
            .filter(n__gt=RUNS_KEPT)
            .values_list("rule_id", flat=True)
        )
    if not rule_ids:
        return 0
    oldest_kept = (
        AutomationRun.objects.filter(rule_id=OuterRef("rule_id"))
        .order_by("-id")
        .values("id")[RUNS_KEPT - 1 : RUNS_KEPT]
    )
    deleted, _ = AutomationRun.objects.filter(rule_id__in=set(rule_ids), id__lt=Subquery(oldest_kept)).delete()
    return deleted
