"""Factories of plans, billing records, legal entities and withdrawals; a record's account is its
widget's account, and an entity or withdrawal inherits the account of what it hangs off."""

import factory
from django.core.files.base import ContentFile

from apps.billing.models import (
    AccountPlan,
    Balance,
    Invoice,
    InvoiceItem,
    LegalEntity,
    Plan,
    Subscription,
    Transaction,
    Withdrawal,
)
from apps.chats.models import File
from tests.support.factories import AccountFactory, WidgetFactory

# A valid body of POST /v1/billing/entities: all fourteen fields, identifiers as digit strings.
ENTITY_FIELDS = {
    "short_name": "ООО «Ромашка»",
    "full_name": "Общество с ограниченной ответственностью «Ромашка»",
    "representative": "Генеральный директор Иванов И. И.",
    "legal_address": "123456, Москва, ул. Пушкина, д. 1",
    "postal_address": "123456, Москва, а/я 10",
    "contact_person": "Петров Пётр",
    "contact_phone": "+7 (495) 123-45-67",
    "inn": "7701234567",
    "kpp": "770101001",
    "ogrn": "1027700132195",
    "bank_name": "ПАО Сбербанк",
    "bik": "044525225",
    "checking_account": "40702810900000000001",
    "correspondent_account": "30101810400000000225",
}


class PlanFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Plan

    slug = factory.Sequence(lambda n: f"plan_{n}")
    name = factory.Sequence(lambda n: f"Plan {n}")
    is_paid = True
    seats = 5
    paid_features = factory.LazyFunction(lambda: ["messengers", "ai"])
    ad_cabinet_slots = 2
    premium_skins = True


class AccountPlanFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AccountPlan

    account = factory.SubFactory(AccountFactory)
    plan = factory.SubFactory(PlanFactory)


class LegalEntityFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = LegalEntity

    account = factory.SubFactory(AccountFactory)
    short_name = factory.Sequence(lambda n: f"ООО «Ромашка {n}»")
    full_name = factory.LazyAttribute(lambda o: f"Общество с ограниченной ответственностью {o.short_name}")
    representative = ENTITY_FIELDS["representative"]
    legal_address = ENTITY_FIELDS["legal_address"]
    postal_address = ENTITY_FIELDS["postal_address"]
    contact_person = ENTITY_FIELDS["contact_person"]
    contact_phone = ENTITY_FIELDS["contact_phone"]
    inn = ENTITY_FIELDS["inn"]
    kpp = ENTITY_FIELDS["kpp"]
    ogrn = ENTITY_FIELDS["ogrn"]
    bank_name = ENTITY_FIELDS["bank_name"]
    bik = ENTITY_FIELDS["bik"]
    checking_account = ENTITY_FIELDS["checking_account"]
    correspondent_account = ENTITY_FIELDS["correspondent_account"]


class WithdrawalFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Withdrawal

    legal_entity = factory.SubFactory(LegalEntityFactory)
    account = factory.SelfAttribute("legal_entity.account")
    amount_minor = 150000


class _WidgetRecordFactory(factory.django.DjangoModelFactory):
    widget = factory.SubFactory(WidgetFactory)
    account = factory.SelfAttribute("widget.account")


class BalanceFactory(_WidgetRecordFactory):
    class Meta:
        model = Balance

    balance_minor = 1234567
    reserved_minor = 34567


class TransactionFactory(_WidgetRecordFactory):
    class Meta:
        model = Transaction

    type = Transaction.Type.TOP_UP
    state = Transaction.State.COMPLETED
    direction = Transaction.Direction.CREDIT
    amount_minor = 500000
    description = "Пополнение баланса"


class SubscriptionFactory(_WidgetRecordFactory):
    class Meta:
        model = Subscription

    kind = Subscription.Kind.PRODUCT
    status = Subscription.Status.ACTIVE
    product = "plan_pro"
    name = "Pro"
    price_minor = 299000


class InvoiceFactory(_WidgetRecordFactory):
    """A bank-transfer invoice against a legal entity of the widget's account (what the API shows)."""

    class Meta:
        model = Invoice

    number = factory.Sequence(lambda n: f"INV-{n:05d}")
    payment_method = Invoice.PaymentMethod.BANK_TRANSFER
    legal_entity = factory.SubFactory(LegalEntityFactory, account=factory.SelfAttribute("..account"))
    total_minor = 299000


class InvoiceItemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = InvoiceItem

    invoice = factory.SubFactory(InvoiceFactory)
    position = factory.Sequence(lambda n: n + 1)
    description = "Тариф Pro, 1 месяц"
    quantity = 1
    unit_price_minor = 299000
    amount_minor = factory.LazyAttribute(lambda o: o.quantity * o.unit_price_minor)


def make_file(widget, name="invoice.pdf") -> File:
    """A stored file of `widget` (MEDIA_ROOT should point at a temporary folder)."""
    file = File(widget=widget, original_name=name, content_type="application/pdf", size=12)
    file.stored.save(name, ContentFile(b"%PDF-1.4 doc"), save=False)
    file.save()
    return file
