"""Reads of the webhooks: the active subscriptions an event fans out to, and the deliveries that no
tenant owns (the platform's own operations)."""

from __future__ import annotations

import operator
from collections.abc import Iterable
from datetime import datetime
from functools import reduce

from django.db import DEFAULT_DB_ALIAS
from django.db.models import Count, Min, Q

from apps.core import ports
from apps.platform.statements import Slot, Statement

from .models import Delivery, Subscription

_SUBSCRIPTION_COLUMNS = tuple(f.attname for f in Subscription._meta.concrete_fields)


def _active_subscriptions(widgets: int):
    """The active subscriptions of `widgets` widgets (slots w0, w1, ...)."""
    widget = Subscription._meta.get_field("widget")
    # one `widget_id = slot` per widget, ORed (a related `__in` prepares its values before a slot is bound)
    any_widget = reduce(operator.or_, (Q(widget_id=Slot(f"w{n}", widget)) for n in range(widgets)))
    return Subscription.objects.filter(any_widget, is_active=True).values(*_SUBSCRIPTION_COLUMNS)


# Compiled once per number of widgets (apps.platform.statements): building and compiling this query
# through the ORM would be a large part of the time from an event's commit to its first webhook request.
_SUBSCRIPTIONS = Statement(_active_subscriptions)


def list_active_subscriptions(*, widget_ids: Iterable[int]) -> list[Subscription]:
    """The active subscriptions of these widgets (the fan-out's of a batch of events)."""
    ids = sorted(set(widget_ids))
    if not ids:
        return []
    rows = _SUBSCRIPTIONS.tuples((len(ids),), **{f"w{n}": pk for n, pk in enumerate(ids)})
    return [Subscription.from_db(DEFAULT_DB_ALIAS, _SUBSCRIPTION_COLUMNS, row) for row in rows]


def get_pending_deliveries() -> tuple[int, datetime | None]:
    """Every widget's pending delivery rows together, but those of endpoint kinds counted under a
    label of their own (the channels'): (how many, created_at of the oldest). For /metrics only: it
    names no tenant."""
    counted_apart = [owner for owner, kind in ports.providers(ports.ENDPOINT_KIND).items() if kind.metric != "webhook"]
    found = (
        Delivery.objects.filter(status=Delivery.Status.PENDING)
        .exclude(endpoint__owner__in=counted_apart)
        .aggregate(n=Count("id"), oldest=Min("created_at"))
    )
    return found["n"], found["oldest"]
