"""Ad-marketplace cabinets: created by the interactive cabinet flow (`create_ad_cabinet`, Django
admin), then read, enabled or disabled within the plan's slots, and deleted for good through the
API. Enabling needs a paid plan (409 plan_required) and a free slot (409 cabinet_slots_exhausted);
`suspended_by_billing` is system-owned: never settable, and a suspended cabinet is not switched
by the API (409 cabinet_suspended)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from apps.billing import selectors as billing
from apps.core import events
from apps.core.errors import Conflict
from apps.core.models import Account, Widget

from .models import AdCabinet


class CabinetSlotsExhausted(Conflict):
    code, title = "cabinet_slots_exhausted", "Every ad-cabinet slot of the plan is in use"


class CabinetSuspended(Conflict):
    code, title = "cabinet_suspended", "The cabinet is suspended by billing"


def cabinet_payload(cabinet: AdCabinet) -> dict:
    return {
        "id": cabinet.pk,
        "name": cabinet.name,
        "status": cabinet.status,
        "channel": cabinet.channel,
        "created_at": cabinet.created_at.isoformat(),
        "updated_at": cabinet.updated_at.isoformat(),
    }


@transaction.atomic
def create_ad_cabinet(*, widget: Widget, name: str) -> AdCabinet:
    return AdCabinet.objects.create(widget=widget, name=name)


@transaction.atomic
def set_cabinet_status(*, widget: Widget, cabinet: AdCabinet, status: str) -> AdCabinet:
    """`enabled` or `disabled`. The account's row is locked while the slots are counted, so two
    concurrent enables cannot both take the last slot."""
    Account.objects.select_for_update().filter(pk=widget.account_id).first()
    cabinet = AdCabinet.objects.select_for_update().get(pk=cabinet.pk, widget=widget)
    if cabinet.status == AdCabinet.Status.SUSPENDED_BY_BILLING:
        raise CabinetSuspended("Billing suspended this cabinet; it changes when the account is in good standing.")
    if cabinet.status == status:
        return cabinet
    if status == AdCabinet.Status.ENABLED:
        check_cabinet_can_be_enabled(widget=widget)
    cabinet.status, cabinet.updated_at = status, timezone.now()
    cabinet.save(update_fields=["status", "updated_at"])
    events.emit(widget, events.WIDGET_CONFIG_CHANGED)
    return cabinet


def check_cabinet_can_be_enabled(*, widget: Widget) -> None:
    """Raise PlanRequired or CabinetSlotsExhausted unless one more cabinet of `widget`'s account may
    be enabled. `set_cabinet_status` calls it with the account's row locked; Django admin's form
    calls it to answer a refusal as a form error before saving."""
    from .messengers import PlanRequired

    if not billing.has_paid_plan(widget.account):
        raise PlanRequired("Enabling an ad cabinet needs a paid plan.")
    used = AdCabinet.objects.filter(widget__account_id=widget.account_id, status=AdCabinet.Status.ENABLED).count()
    if used >= billing.ad_cabinet_slots_for(widget.account):
        raise CabinetSlotsExhausted(f"The plan's {used} ad-cabinet slots are all in use.")


@transaction.atomic
def set_cabinet_suspension(*, widget: Widget, cabinet: AdCabinet, suspended: bool) -> AdCabinet:
    """Billing staff's switch (Django admin), the one way in and out of `suspended_by_billing`.
    Lifting a suspension leaves the cabinet `disabled`: enabling it again takes the plan's rules."""
    cabinet = AdCabinet.objects.select_for_update().get(pk=cabinet.pk, widget=widget)
    status = AdCabinet.Status.SUSPENDED_BY_BILLING if suspended else AdCabinet.Status.DISABLED
    if suspended == (cabinet.status == AdCabinet.Status.SUSPENDED_BY_BILLING):
        return cabinet
    cabinet.status, cabinet.updated_at = status, timezone.now()
    cabinet.save(update_fields=["status", "updated_at"])
    events.emit(widget, events.WIDGET_CONFIG_CHANGED)
    return cabinet


@transaction.atomic
def delete_cabinet(*, widget: Widget, cabinet: AdCabinet) -> None:
    AdCabinet.objects.filter(pk=cabinet.pk, widget=widget).delete()
    events.emit(widget, events.WIDGET_CONFIG_CHANGED)


def cabinet_ids(widget: Widget) -> set[int]:
    """The widget's cabinets (departments may name their `av__<id>` channels)."""
    return set(AdCabinet.objects.filter(widget=widget).values_list("pk", flat=True))
