"""Alerts and demand signals: their queries, inputs and documented shapes."""

from __future__ import annotations

from rest_framework import serializers

from apps.core.api.query import MomentField
from apps.core.api.serializers import (
    InputSerializer,
    StrictIntegerField,
)

from ...models import Alert, DemandSignal
from .fields import DEMAND_CATEGORIES


class AlertQuery(InputSerializer):
    state = serializers.ChoiceField(
        choices=["unacknowledged", "acknowledged", "all"],
        required=False,
        help_text="`unacknowledged`, `acknowledged` or `all` (default).",
    )


class AcknowledgeInput(InputSerializer):
    ids = serializers.ListField(
        child=StrictIntegerField(min_value=1),
        max_length=100,
        required=False,
        help_text="The alerts to acknowledge, at most 100.",
    )


class AlertDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The alert's id.")
    kind = serializers.CharField(help_text="What the alert is about.")
    message = serializers.CharField(help_text="The alert, for people.")
    details = serializers.DictField(help_text="Details of the alert, by name.")
    state = serializers.ChoiceField(
        choices=["unacknowledged", "acknowledged"], help_text="`unacknowledged` or `acknowledged`."
    )
    created_at = serializers.DateTimeField(help_text="When the alert was raised.")
    acknowledged_at = serializers.DateTimeField(
        allow_null=True, help_text="When the alert was acknowledged; null until then."
    )


class AcknowledgedDoc(serializers.Serializer):
    acknowledged = serializers.IntegerField(help_text="How many alerts this call acknowledged.")
    ids = serializers.ListField(child=serializers.IntegerField(), help_text="The acknowledged alerts' ids.")


class DemandQuery(InputSerializer):
    """`from`, `to` (dates or date-times, Europe/Moscow unless an offset is given), `category`, `limit`."""

    def get_fields(self):
        return {
            "from": MomentField(required=False, help_text="Only signals that occurred at or after this moment."),
            "to": MomentField(required=False, help_text="Only signals that occurred before this moment."),
            "category": serializers.ChoiceField(
                choices=DEMAND_CATEGORIES, required=False, help_text="Only signals of this category."
            ),
        }


class DemandSignalDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The signal's id.")
    category = serializers.ChoiceField(choices=DEMAND_CATEGORIES, help_text="The signal's category.")
    topic = serializers.CharField(help_text="What visitors asked for.")
    count = serializers.IntegerField(help_text="How many times it occurred.")
    sample = serializers.CharField(help_text="A sample of the visitors' wording.")
    occurred_at = serializers.DateTimeField(help_text="When it occurred.")


class DemandListDoc(serializers.Serializer):
    data = DemandSignalDoc(many=True, help_text="The signals, newest first.")


def alert_payload(alert: Alert) -> dict:
    return {
        "id": alert.pk,
        "kind": alert.kind,
        "message": alert.message,
        "details": alert.details,
        "state": alert.state,
        "created_at": alert.created_at.isoformat(),
        "acknowledged_at": alert.acknowledged_at.isoformat() if alert.acknowledged_at else None,
    }


def demand_payload(signal: DemandSignal) -> dict:
    return {
        "id": signal.pk,
        "category": signal.category,
        "topic": signal.topic,
        "count": signal.count,
        "sample": signal.sample,
        "occurred_at": signal.occurred_at.isoformat(),
    }
