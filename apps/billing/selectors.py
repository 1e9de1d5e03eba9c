"""Reads of the billing app. Other apps read plans here (or through the same names re-exported by
`billing.services`): plan_for, seats_for, has_paid_plan, has_feature, ad_cabinet_slots_for,
has_premium_skins."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, QuerySet

from apps.core.models import Account, Widget

from .models import (
    UNKNOWN,
    AccountPlan,
    Balance,
    Invoice,
    LegalEntity,
    Plan,
    Transaction,
    Withdrawal,
    known_values,
)

# --- plans ---------------------------------------------------------------------------------------------


def plan_for(account: Account) -> Plan | None:
    """The account's plan, else the default plan, else None (no plan configured at all)."""
    assigned = AccountPlan.objects.select_related("plan").filter(account_id=account.pk).first()
    if assigned is not None:
        return assigned.plan
    return Plan.objects.filter(is_default=True).first()


def seats_for(account: Account) -> int:
    """Paid human operator seats: the assigned plan's seats plus extra seats; an account with no
    plan assigned keeps the seats stored on it (`Account.seats`, kept in step by assign_plan)."""
    assigned = AccountPlan.objects.select_related("plan").filter(account_id=account.pk).first()
    if assigned is None:
        return account.seats
    return assigned.plan.seats + assigned.extra_seats


def has_paid_plan(account: Account) -> bool:
    plan = plan_for(account)
    return bool(plan and plan.is_paid)


def has_feature(account: Account, feature: str) -> bool:
    plan = plan_for(account)
    return bool(plan and feature in (plan.paid_features or []))


def ad_cabinet_slots_for(account: Account) -> int:
    plan = plan_for(account)
    return plan.ad_cabinet_slots if plan else 0


def has_premium_skins(account: Account) -> bool:
    plan = plan_for(account)
    return bool(plan and plan.premium_skins)


# --- widget records ------------------------------------------------------------------------------------


def matching_account(queryset: QuerySet, *, widget: Widget) -> QuerySet:
    """Refine widget-filtered records to those that also name the widget's current account."""
    return queryset.filter(account_id=widget.account_id)


def exposed_invoices(queryset: QuerySet, *, widget: Widget) -> QuerySet:
    """Invoices the API shows: paid by bank transfer against a legal entity of the widget's account."""
    return queryset.filter(
        payment_method=Invoice.PaymentMethod.BANK_TRANSFER,
        legal_entity__isnull=False,
        legal_entity__account_id=widget.account_id,
    )


def filter_slug(queryset: QuerySet, field: str, value: str | None, choices) -> QuerySet:
    """Filter on a status slug. `unknown` matches stored values the enum does not know (statuses
    introduced later), which the API shows as `unknown`."""
    if value is None:
        return queryset
    if value == UNKNOWN:
        return queryset.exclude(**{f"{field}__in": known_values(choices)})
    return queryset.filter(**{field: value})


def get_balance(*, widget: Widget) -> Balance:
    """The widget's balance; an unsaved zero balance when none is recorded for this widget and its
    current account."""
    balance = Balance.objects.filter(widget=widget, account_id=widget.account_id).first()
    return balance or Balance(widget=widget, account_id=widget.account_id)


# --- legal entities --------------------------------------------------------------------------------------


def list_legal_entities(*, account: Account) -> QuerySet:
    return LegalEntity.objects.filter(account_id=account.pk).order_by("-created_at", "-id")


def pending_withdrawals(entity: LegalEntity) -> QuerySet:
    """Withdrawals naming the entity that are not settled (paid, cancelled, rejected); any other
    status, one introduced later included, counts as pending."""
    return Withdrawal.objects.filter(legal_entity_id=entity.pk).exclude(status__in=Withdrawal.SETTLED)


def is_locked_by_pending_withdrawal(entity: LegalEntity) -> bool:
    return pending_withdrawals(entity).exists()


def is_referenced_by_financial_record(entity: LegalEntity) -> bool:
    """An invoice, a transaction or a (settled) withdrawal of any widget names the entity."""
    return (
        LegalEntity.objects.filter(pk=entity.pk)
        .filter(
            Exists(Invoice.objects.filter(legal_entity_id=OuterRef("pk")))
            | Exists(Transaction.objects.filter(legal_entity_id=OuterRef("pk")))
            | Exists(Withdrawal.objects.filter(legal_entity_id=OuterRef("pk")))
        )
        .exists()
    )
