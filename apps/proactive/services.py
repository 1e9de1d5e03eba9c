"""Writes of proactive messages and of their counts. The name's uniqueness is the database's, so two
concurrent writers of one name end as one row and one 409, never a duplicate or a 500. Every write
of a message purges the widget's visitor config (it carries the enabled messages)."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from apps.audit import services as audit
from apps.core import events
from apps.core.models import Widget
from apps.core.timeparse import business_tz

from .errors import NameTaken
from .models import ProactiveCount, ProactiveMessage

AUDIT = "proactive_message"  # audit rows: proactive_message.created, .changed, .deleted
FIELDS = ("name", "enabled", "text_i18n", "rules", "frequency", "priority")
KINDS = ("shown", "opened", "replied")


def _save(row: ProactiveMessage, **kwargs: Any) -> None:
    """Save in a savepoint: a name taken meanwhile fails on the unique constraint and leaves the
    caller's transaction usable for the 409."""
    try:
        with transaction.atomic():
            row.save(**kwargs)
    except IntegrityError:
        raise NameTaken(f"The name {row.name!r} is already used by another proactive message.") from None


def _apply(row: ProactiveMessage, data: dict[str, Any]) -> None:
    for name, value in data.items():
        if name == "agent_id":
            row.agent = value  # the input's tenant-bound field gives the Agent (or None)
        elif name in FIELDS:
            setattr(row, name, value)


@transaction.atomic
def create_message(*, widget: Widget, data: dict[str, Any]) -> ProactiveMessage:
    """`data`: the API input's members (apps.proactive.api.serializers.ProactiveMessageInput, already
    validated; `agent_id` an Agent of the widget or None). 409 `name_taken`."""
    row = ProactiveMessage(widget=widget)
    _apply(row, data)
    assert row.agent is None or row.agent.widget_id == widget.pk
    _save(row, force_insert=True)
    audit.record_row(widget=widget, target_type=AUDIT, target_id=row.pk, before=None, after=audit.values(row))
    events.emit(widget, events.WIDGET_CONFIG_CHANGED)  # the visitor config carries the enabled messages
    return row


@transaction.atomic
def update_message(*, widget: Widget, message: ProactiveMessage, changes: dict[str, Any]) -> ProactiveMessage:
    """Merge `changes` (any subset of create's members) into the message. 409 `name_taken`."""
    assert message.widget_id == widget.pk
    row = (
        ProactiveMessage.objects.select_for_update(of=("self",))
        .select_related("agent")
        .get(pk=message.pk, widget=widget)
    )
    before = audit.values(row)
    _apply(row, changes)
    assert row.agent is None or row.agent.widget_id == widget.pk
    row.updated_at = timezone.now()
    _save(row)
    audit.record_row(widget=widget, target_type=AUDIT, target_id=row.pk, before=before, after=audit.values(row))
    events.emit(widget, events.WIDGET_CONFIG_CHANGED)
    return row


@transaction.atomic
def delete_message(*, widget: Widget, message: ProactiveMessage) -> None:
    """Delete the message and its counts."""
    assert message.widget_id == widget.pk
    row = ProactiveMessage.objects.select_for_update().filter(pk=message.pk, widget=widget).first()
    if row is None:
        return
    before = audit.values(row)
    row.delete()
    audit.record_row(widget=widget, target_type=AUDIT, target_id=message.pk, before=before, after=None)
    events.emit(widget, events.WIDGET_CONFIG_CHANGED)


def count(*, widget: Widget, message_id: int, kind: str) -> None:
    """Add one to `kind` (shown, opened, replied) of the message's row for today (the business time
    zone). An increment in place; the day's first event makes the row in a savepoint, and a
    concurrent first event that made it meanwhile is followed by the increment."""
    if kind not in KINDS:
        raise ValueError(kind)
    day = timezone.now().astimezone(business_tz()).date()
    rows = ProactiveCount.objects.filter(widget=widget, message_id=message_id, day=day)
    if rows.update(**{kind: F(kind) + 1}):
        return
    try:
        with transaction.atomic():
            ProactiveCount.objects.create(widget=widget, message_id=message_id, day=day, **{kind: 1})
    except IntegrityError:
        rows.update(**{kind: F(kind) + 1})
