"""Writes of the billing app: the account profile, legal entities, plan assignment, and the records
operations staff create (admin, `seed_demo`).

Legal-entity writes of the API (create, update, delete) share one budget of 10 per hour per
account; Django admin's writes of operations staff spend none of it. The
budget is charged last, inside the write's transaction: a refused write (422, 404, 409) costs
nothing on either rate-limit backend, and the eleventh write answers 429 and rolls back whole.

No function here accepts an amount from the API or moves money: the record writers below are for
operations staff only.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from apps.core import events
from apps.core.errors import Conflict
from apps.core.files import store_file
from apps.core.models import Account, Widget
from apps.core.ratelimit import Budget

from . import selectors
from .models import AccountPlan, Invoice, InvoiceItem, LegalEntity, Plan, Withdrawal

# Re-exported for other apps: the plan reads they need.
from .selectors import ad_cabinet_slots_for as ad_cabinet_slots_for
from .selectors import has_feature as has_feature
from .selectors import has_paid_plan as has_paid_plan
from .selectors import has_premium_skins as has_premium_skins
from .selectors import plan_for as plan_for
from .selectors import seats_for as seats_for

# Spec, Limits: billing entity writes, 10 per hour per account (create, update and delete together).
ENTITY_WRITES = Budget("billing_entity_writes", 10, 3600)

ENTITY_FIELDS = (
    "short_name",
    "full_name",
    "representative",
    "legal_address",
    "postal_address",
    "contact_person",
    "contact_phone",
    "inn",
    "kpp",
    "ogrn",
    "bank_name",
    "bik",
    "checking_account",
    "correspondent_account",
)
PROFILE_FIELDS = ("name", "surname", "phone")


class EntityLockedByPendingWithdrawal(Conflict):
    """A withdrawal that is not yet paid names this legal entity; it cannot be changed or deleted
    until the withdrawal is paid, cancelled or rejected."""

    code, title = "entity_locked_by_pending_withdrawal", "Legal entity locked by a pending withdrawal"


class EntityReferencedByFinancialRecord(Conflict):
    """An invoice, a transaction or a withdrawal names this legal entity; it cannot be deleted."""

    code, title = "entity_referenced_by_financial_record", "Legal entity referenced by a financial record"


def _charge_entity_write(account_id: int) -> None:
    ENTITY_WRITES.check(account_id, detail="At most 10 legal-entity writes per hour per account.")


def _lock_entity(account: Account, entity: LegalEntity) -> LegalEntity:
    return LegalEntity.objects.select_for_update().get(pk=entity.pk, account_id=account.pk)


# --- account profile -------------------------------------------------------------------------------------


@transaction.atomic
def update_account_profile(*, widget: Widget, changes: dict) -> Account:
    """Merge `changes` (a subset of name, surname, phone; "" clears) into the widget's account.

    A changed `name` emits account.profile_changed (the served cache of every widget the account
    owns is purged)."""
    unknown = set(changes) - set(PROFILE_FIELDS)
    assert not unknown, f"not profile fields: {unknown}"
    account = Account.objects.select_for_update().get(pk=widget.account_id)
    changed = [field for field, value in changes.items() if getattr(account, field) != value]
    for field in changed:
        setattr(account, field, changes[field])
    if changed:
        account.save(update_fields=changed)
    if "name" in changed:
        events.emit(widget, events.ACCOUNT_PROFILE_CHANGED, account_id=account.pk)
    return account


# --- legal entities ----------------------------------------------------------------------------------------


@transaction.atomic
def create_legal_entity(*, account: Account, fields: dict, spend_budget: bool = True) -> LegalEntity:
    """Create an account-wide legal entity from all fourteen validated fields. Django admin's
    writes (operations staff) pass `spend_budget=False`: the budget is the API's."""
    missing = set(ENTITY_FIELDS) - set(fields)
    assert not missing and set(fields) <= set(ENTITY_FIELDS), f"entity fields: missing {missing}"
    now = timezone.now()
    entity = LegalEntity.objects.create(account=account, created_at=now, updated_at=now, **fields)
    if spend_budget:
        _charge_entity_write(account.pk)
    return entity


def lock_changeable_entity(*, account: Account, entity: LegalEntity) -> LegalEntity:
    """The entity, row-locked until the caller's transaction ends; refused 409
    entity_locked_by_pending_withdrawal while an unpaid withdrawal names it. The check of every change
    and deletion of an entity (the API's PATCH and DELETE, Django admin's change form, which holds
    the lock until its save commits). The lock orders it against a withdrawal being created."""
    entity = _lock_entity(account, entity)
    if selectors.is_locked_by_pending_withdrawal(entity):
        raise EntityLockedByPendingWithdrawal("An unpaid withdrawal names this legal entity.")
    return entity


@transaction.atomic
def update_legal_entity(
    *, account: Account, entity: LegalEntity, changes: dict, spend_budget: bool = True
) -> LegalEntity:
    """Apply `changes` (validated entity fields). Refused 409 while a pending withdrawal names the
    entity (`lock_changeable_entity`). Django admin passes `spend_budget=False`."""
    assert set(changes) <= set(ENTITY_FIELDS), f"not entity fields: {set(changes) - set(ENTITY_FIELDS)}"
    entity = lock_changeable_entity(account=account, entity=entity)
    for field, value in changes.items():
        setattr(entity, field, value)
    entity.updated_at = timezone.now()
    entity.save(update_fields=[*changes, "updated_at"])
    if spend_budget:
        _charge_entity_write(account.pk)
    return entity


@transaction.atomic
def delete_legal_entity(*, account: Account, entity: LegalEntity, spend_budget: bool = True) -> None:
    """Delete the entity. Refused 409 while a pending withdrawal names it, and when an invoice, a
    transaction or a settled withdrawal does (financial history keeps its counterparty). Django
    admin passes `spend_budget=False`."""
    entity = lock_changeable_entity(account=account, entity=entity)
    if selectors.is_referenced_by_financial_record(entity):
        raise EntityReferencedByFinancialRecord("An invoice, transaction or withdrawal names this legal entity.")
    entity.delete()
    if spend_budget:
        _charge_entity_write(account.pk)


# --- operations staff: plans and records ------------------------------------------------------------------


@transaction.atomic
def assign_plan(*, account: Account, plan: Plan, extra_seats: int = 0) -> AccountPlan:
    """Put the account on `plan` and keep `Account.seats` in step with the plan's seats.

    A change of plan emits account.profile_changed: the served config of every widget of the
    account shows what the plan allows (a premium skin falls back to the default without one), so
    it is purged rather than served from the cache until it expires."""
    account = Account.objects.select_for_update().get(pk=account.pk)
    previous = selectors.plan_for(account)
    assigned, _ = AccountPlan.objects.update_or_create(
        account=account, defaults={"plan": plan, "extra_seats": extra_seats, "started_at": timezone.now()}
    )
    account.seats = plan.seats + extra_seats
    account.save(update_fields=["seats"])
    widget = Widget.objects.filter(account_id=account.pk).order_by("pk").first()
    if widget is not None and (previous is None or previous.pk != plan.pk):
        events.emit(widget, events.ACCOUNT_PROFILE_CHANGED, account_id=account.pk)
    return assigned


@transaction.atomic
def remove_plan(*, account: Account) -> None:
    """Take the account off its assigned plan: it is on the default plan from now on, with that
    plan's seats (the stored default of `Account.seats` when no plan is the default), never the
    seats of the plan it left. Purges the served config like assign_plan."""
    account = Account.objects.select_for_update().get(pk=account.pk)
    deleted, _ = AccountPlan.objects.filter(account=account).delete()
    if not deleted:
        return
    default = Plan.objects.filter(is_default=True).first()
    account.seats = default.seats if default is not None else Account._meta.get_field("seats").get_default()
    account.save(update_fields=["seats"])
    widget = Widget.objects.filter(account_id=account.pk).order_by("pk").first()
    if widget is not None:
        events.emit(widget, events.ACCOUNT_PROFILE_CHANGED, account_id=account.pk)


@transaction.atomic
def sync_plan_seats(*, plan: Plan) -> int:
    """After a plan's seats change: re-derive `Account.seats` of every account on it."""
    count = 0
    for assigned in AccountPlan.objects.select_for_update().filter(plan=plan).select_related("account"):
        seats = plan.seats + assigned.extra_seats
        if assigned.account.seats != seats:
            Account.objects.filter(pk=assigned.account_id).update(seats=seats)
            count += 1
    return count


@transaction.atomic
def create_withdrawal(
    *, account: Account, legal_entity: LegalEntity, amount_minor: int, currency: str = "RUB", minor_unit_scale: int = 2
) -> Withdrawal:
    """Record a partner payout to one of the account's entities (operations staff only). The entity
    row lock orders it against an API PATCH or DELETE of the entity."""
    entity = _lock_entity(account, legal_entity)
    return Withdrawal.objects.create(
        account=account,
        legal_entity=entity,
        amount_minor=amount_minor,
        currency=currency,
        minor_unit_scale=minor_unit_scale,
    )


@transaction.atomic
def create_invoice(
    *,
    widget: Widget,
    number: str,
    legal_entity: LegalEntity | None,
    items: list[dict],
    payment_method: str = Invoice.PaymentMethod.BANK_TRANSFER,
    status: str = Invoice.Status.ISSUED,
    currency: str = "RUB",
    minor_unit_scale: int = 2,
    document=None,
    due_at=None,
) -> Invoice:
    """Raise an invoice with its lines (operations staff only); the total is the sum of the lines.
    Each item is {description, quantity, unit_price_minor}."""
    if legal_entity is not None and legal_entity.account_id != widget.account_id:
        raise ValueError("the legal entity belongs to another account")
    if document is not None and document.widget_id != widget.pk:
        raise ValueError("the document belongs to another widget")
    invoice = Invoice.objects.create(
        widget=widget,
        account_id=widget.account_id,
        number=number,
        status=status,
        payment_method=payment_method,
        legal_entity=legal_entity,
        currency=currency,
        minor_unit_scale=minor_unit_scale,
        document=document,
        due_at=due_at,
    )
    for position, item in enumerate(items, start=1):
        InvoiceItem.objects.create(
            invoice=invoice,
            position=position,
            description=item["description"],
            quantity=item["quantity"],
            unit_price_minor=item["unit_price_minor"],
            amount_minor=item["quantity"] * item["unit_price_minor"],
        )
    return recompute_invoice_total(invoice=invoice)


def recompute_invoice_total(*, invoice: Invoice) -> Invoice:
    """With lines, the total is their sum; an invoice without lines (legacy path) keeps its total."""
    amounts = list(InvoiceItem.objects.filter(invoice=invoice).values_list("amount_minor", flat=True))
    if amounts and invoice.total_minor != sum(amounts):
        invoice.total_minor = sum(amounts)
        invoice.save(update_fields=["total_minor"])
    return invoice


def store_invoice_document(*, widget: Widget, content, name: str, content_type: str | None, size: int):
    """Store an invoice document as a file of `widget` (served by GET /v1/files/{id})."""
    # The chats app keeps its file writer beside the files API; it is imported here, at call time,
    # until chats.services exposes it.
    return store_file(widget=widget, content=content, original_name=name, content_type=content_type, size=size)


def seed_demo_billing(widget: Widget) -> dict:
    """The demo billing records of `widget` (`manage.py seed_demo`), once; returns their ids."""
    # Imported here: the demo module builds its records through this module's services.
    from .demo import seed_demo_billing as seed

    return seed(widget)
