"""Writes of automation rules and of their run log. Every rule the API states is enforced here, so
the REST routes, the owner's console page and the admin share one set of rules and messages; every
write changes the widget's rule-set version in its transaction, with the version's members (the
workers load the rules again, and each event they log at the version ran its members), and is
audited (`automation_rule.created`, `.changed`, `.deleted`)."""

from __future__ import annotations

import heapq
from datetime import timedelta
from itertools import islice
from typing import Any

from django.db import transaction
from django.db.models import Count, Exists, OuterRef
from django.utils import timezone

from apps.audit import services as audit
from apps.core import events
from apps.core.errors import ValidationFailed
from apps.core.models import Widget

from . import actions as engine
from .conditions import validate_conditions
from .models import EVENTS, RUNS_KEPT, AutomationEvaluation, AutomationRule, RuleSet, RuleSetMember, new_version
from .webhook import check_webhook_actions

AUDIT = "automation_rule"
MAX_RULES = 200


def bump(widget: Widget) -> None:
    """A write to the widget's rules: a new version with its members (the rules enabled now, with
    their events); every worker loads the rules again on its next event, and the web processes read
    the events the rules react to again (`selectors.rule_events`, cached with the widget config).
    The version row's lock orders concurrent writes, so each version's members are the rules as of
    its own write."""
    widget_id = widget.pk
    version, now = new_version(), timezone.now()
    current = RuleSet.objects.filter(widget_id=widget_id)
    if not current.update(version=version, changed_at=now):
        RuleSet.objects.get_or_create(widget_id=widget_id)  # a concurrent first write may make it too
        current.update(version=version, changed_at=now)
    enabled = AutomationRule.objects.filter(widget_id=widget_id, enabled=True).values_list("pk", "event")
    RuleSetMember.objects.bulk_create(
        RuleSetMember(widget_id=widget_id, version=version, event=event, rule_id=pk) for pk, event in enabled
    )
    events.emit(widget, events.WIDGET_CONFIG_CHANGED)


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
    bump(widget)
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
    bump(widget)
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
    bump(widget)
    audit.record_row(widget=widget, target_type=AUDIT, target_id=rule.pk, before=before, after=None)


# --- the run log ------------------------------------------------------------------------------------

# A version superseded this long ago can have no evaluation still on its way (a task's time limit is
# far shorter): its members are forgotten once no evaluation of it is left.
VERSION_GRACE = timedelta(hours=1)


def trim_runs(*, widget_ids: list[int] | None = None) -> int:
    """Delete the evaluations that are in no rule's newest RUNS_KEPT runs, of these widgets (every
    widget with more than RUNS_KEPT evaluations when None), then the members of versions superseded
    VERSION_GRACE ago that no evaluation is left of; returns how many evaluations went."""
    if widget_ids is None:
        widget_ids = list(
            AutomationEvaluation.objects.order_by()
            .values("widget_id")
            .annotate(n=Count("id"))
            .filter(n__gt=RUNS_KEPT)
            .values_list("widget_id", flat=True)
        )
    deleted = sum(_trim_widget(widget_id) for widget_id in widget_ids)
    superseded = RuleSet.objects.filter(
        widget_id=OuterRef("widget_id"), changed_at__lt=timezone.now() - VERSION_GRACE
    ).exclude(version=OuterRef("version"))
    evaluated = AutomationEvaluation.objects.filter(widget_id=OuterRef("widget_id"), version=OuterRef("version"))
    RuleSetMember.objects.filter(Exists(superseded)).exclude(Exists(evaluated)).delete()
    return deleted


def _trim_widget(widget_id: int) -> int:
    """One widget: each rule's newest RUNS_KEPT evaluations are those of its (version, event) pairs
    newest first; an evaluation of a pair is kept when it is at or after the oldest kept one of a
    member of the pair, so each pair is cut below the lowest such id (everything of a pair with no
    member left: its rules were deleted)."""
    ids_of: dict[tuple[int, str], list[int]] = {}
    rows = AutomationEvaluation.objects.filter(widget_id=widget_id).order_by("-id")
    for pk, version, event in rows.values_list("id", "version", "event"):
        ids_of.setdefault((version, event), []).append(pk)
    pairs_of: dict[int, list[tuple[int, str]]] = {}
    members = RuleSetMember.objects.filter(widget_id=widget_id).values_list("rule_id", "version", "event")
    for rule_id, version, event in members:
        pairs_of.setdefault(rule_id, []).append((version, event))
    keep_from = {pair: ids[0] + 1 for pair, ids in ids_of.items()}
    for pairs in pairs_of.values():
        newest = list(islice(heapq.merge(*(ids_of.get(pair, ()) for pair in pairs), reverse=True), RUNS_KEPT))
        oldest_kept = newest[-1] if len(newest) == RUNS_KEPT else 0
        for pair in pairs:
            if pair in keep_from:
                keep_from[pair] = min(keep_from[pair], oldest_kept)
    deleted = 0
    for (version, event), threshold in keep_from.items():
        if ids_of[(version, event)][-1] < threshold:
            deleted += rows.filter(version=version, event=event, id__lt=threshold).delete()[0]
    return deleted
