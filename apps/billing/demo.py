"""Demo billing records for `seed_demo`: a paid plan, a legal entity, a balance, transactions, a
subscription and a bank-transfer invoice with lines and a document. Safe to run twice."""

from __future__ import annotations

from datetime import timedelta

from django.core.files.base import ContentFile
from django.db import transaction
from django.utils import timezone

from apps.core.models import Widget

from . import services
from .models import Balance, Invoice, LegalEntity, Plan, Subscription, Transaction

DEMO_PLAN = "demo_pro"
DEMO_INVOICE = "DEMO-0001"
DEMO_ENTITY = {
    "short_name": "ООО «Демо»",
    "full_name": "Общество с ограниченной ответственностью «Демо»",
    "representative": "Генеральный директор Демидов Д. Д.",
    "legal_address": "101000, Москва, ул. Мясницкая, д. 1",
    "postal_address": "101000, Москва, ул. Мясницкая, д. 1",
    "contact_person": "Демидов Демид",
    "contact_phone": "+7 (495) 000-00-00",
    "inn": "7700000000",
    "kpp": "770001001",
    "ogrn": "1027700000000",
    "bank_name": "АО «Демо Банк»",
    "bik": "044525000",
    "checking_account": "40702810000000000000",
    "correspondent_account": "30101810000000000000",
}
_DOCUMENT = b"%PDF-1.4\n% demo invoice DEMO-0001\n"


@transaction.atomic
def seed_demo_billing(widget: Widget) -> dict:
    """Create the demo records of `widget` once; returns their ids."""
    account = widget.account
    plan, _ = Plan.objects.get_or_create(
        slug=DEMO_PLAN,
        defaults={
            "name": "Demo Pro",
            "is_paid": True,
            "seats": 5,
            "paid_features": ["messengers", "ai", "ad_cabinets"],
            "ad_cabinet_slots": 2,
            "premium_skins": True,
        },
    )
    if services.plan_for(account) != plan:
        services.assign_plan(account=account, plan=plan)

    entity = LegalEntity.objects.filter(account=account, inn=DEMO_ENTITY["inn"]).first()
    if entity is None:
        entity = LegalEntity.objects.create(account=account, **DEMO_ENTITY)

    Balance.objects.get_or_create(
        widget=widget, defaults={"account": account, "balance_minor": 1_250_000, "reserved_minor": 50_000}
    )

    invoice = Invoice.objects.filter(widget=widget, number=DEMO_INVOICE).first()
    if invoice is None:
        document = services.store_invoice_document(
            widget=widget,
            content=ContentFile(_DOCUMENT),
            name=f"{DEMO_INVOICE}.pdf",
            content_type="application/pdf",
            size=len(_DOCUMENT),
        )
        invoice = services.create_invoice(
            widget=widget,
            number=DEMO_INVOICE,
            legal_entity=entity,
            items=[
                {"description": "Тариф Demo Pro, 1 месяц", "quantity": 1, "unit_price_minor": 299_000},
                {"description": "Дополнительное место оператора", "quantity": 2, "unit_price_minor": 49_000},
            ],
            document=document,
            due_at=timezone.now() + timedelta(days=10),
        )
        Transaction.objects.bulk_create(
            [
                Transaction(
                    widget=widget,
                    account=account,
                    type=Transaction.Type.TOP_UP,
                    direction=Transaction.Direction.CREDIT,
                    amount_minor=1_000_000,
                    description="Пополнение по счёту",
                    invoice=invoice,
                    legal_entity=entity,
                ),
                Transaction(
                    widget=widget,
                    account=account,
                    type=Transaction.Type.SUBSCRIPTION_CHARGE,
                    direction=Transaction.Direction.DEBIT,
                    amount_minor=299_000,
                    description="Тариф Demo Pro",
                ),
                Transaction(
                    widget=widget,
                    account=account,
                    type=Transaction.Type.BONUS,
                    state=Transaction.State.PENDING,
                    direction=Transaction.Direction.CREDIT,
                    amount_minor=50_000,
                    description="Бонус",
                ),
            ]
        )
        Subscription.objects.create(
            widget=widget,
            account=account,
            kind=Subscription.Kind.PRODUCT,
            product=DEMO_PLAN,
            name="Demo Pro",
            price_minor=299_000,
            current_period_end=timezone.now() + timedelta(days=30),
        )
    return {"plan": plan.slug, "legal_entity_id": entity.pk, "invoice_id": invoice.pk}
