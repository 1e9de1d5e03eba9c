"""What the engine reads of a leased row (`_SEND_FIELDS`) and which of the rows are sent: a
deactivated subscription's rows are dropped, an `Endpoint`'s rows follow its `mode`."""

from __future__ import annotations

from django.utils import timezone

from ..models import Delivery, Endpoint, Subscription
from .kinds import prepare
from .settle import _notify_settled

# What an attempt reads (`_send`, `_record`): a deferred field read later would cost a query a row.
_SEND_FIELDS = (
    "widget",  # endpoint kinds read their targets' rows by widget (a messenger's credential)
    "subscription",
    "endpoint",
    "event",
    "key",
    "delivery_id",
    "event_type",
    "status",
    "body",
    "attempts",
    "subscription__url",
    "subscription__secret_encrypted",
    "subscription__is_active",
    "endpoint__owner",
    "endpoint__owner_id",
    "endpoint__url",
    "endpoint__secret_encrypted",
    "endpoint__previous_secret_encrypted",
    "endpoint__previous_secret_until",
    "endpoint__mode",
)
# A delivery's targets: (its foreign key, the model), in the order `_lease_and_load_sql` reads them.
_TARGETS = (("subscription", Subscription), ("endpoint", Endpoint))


def _attnames(model, names: set[str]) -> tuple[str, ...]:
    """The attnames of `model`'s fields named in `names`, in the order `Model.from_db` takes values."""
    return tuple(f.attname for f in model._meta.concrete_fields if f.name in names)


# What `_lease_and_load_sql` reads of each model: `_SEND_FIELDS`' attnames and the primary key.
_LOADED = {
    Delivery: _attnames(Delivery, {"id", *(name for name in _SEND_FIELDS if "__" not in name)}),
    **{
        model: _attnames(
            model, {"id", *(name.split("__")[1] for name in _SEND_FIELDS if name.startswith(f"{relation}__"))}
        )
        for relation, model in _TARGETS
    },
}


def _load(ids: list[int]) -> list[Delivery]:
    """The leased rows with their endpoints as they are now, in one query. Rows of a subscription
    deactivated meanwhile are dropped silently (deleted endpoints took their rows with them); rows of
    an `Endpoint` in `drop` mode are skipped (kept for its log), in `hold` mode parked unsent."""
    return _ready_to_send(list(_loaded(Delivery.objects.filter(pk__in=ids, status=Delivery.Status.PENDING))))


def _loaded(deliveries):
    """`deliveries` read with what an attempt reads (`_SEND_FIELDS`) and their targets, in one query:
    not the log's copy of the payload, nor the subscription's event list."""
    return deliveries.select_related("subscription", "endpoint").only(*_SEND_FIELDS)


def _ready_to_send(rows: list[Delivery]) -> list[Delivery]:
    """`_load`'s rows that may be sent now (see `_load`), the others dropped, skipped or parked; the
    ones sent are prepared by their endpoints' kinds (`kinds.prepare`)."""
    inactive = [row.pk for row in rows if row.subscription_id and not row.subscription.is_active]
    if inactive:
        Delivery.objects.filter(pk__in=inactive).delete()
    dropped = [row.pk for row in rows if row.endpoint_id and row.endpoint.mode == Endpoint.Mode.DROP]
    if dropped:
        skip_endpoint_rows(Delivery.objects.filter(pk__in=dropped), reason="endpoint_dropped")
    held = [row.pk for row in rows if row.endpoint_id and row.endpoint.mode == Endpoint.Mode.HOLD]
    if held:
        Delivery.objects.filter(pk__in=held, status=Delivery.Status.PENDING).update(next_attempt_at=None)
    ready = [row for row in rows if row.target.is_active and row.pk not in held]
    prepare(ready)
    return ready


def skip_endpoint_rows(rows, *, reason: str) -> int:
    """Mark pending rows `skipped` (never sent again); their owners hear they settled."""
    rows = rows.filter(status=Delivery.Status.PENDING)
    settled = set(rows.exclude(endpoint=None).values_list("endpoint__owner", "endpoint_id").distinct())
    count = rows.update(
        status=Delivery.Status.SKIPPED, next_attempt_at=None, last_error=reason, updated_at=timezone.now()
    )
    _notify_settled(settled)
    return count
