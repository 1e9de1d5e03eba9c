"""Plans, billing records, legal entities and withdrawals.

Money is an integer in minor units (`*_minor`) with `currency` (ISO 4217) and `minor_unit_scale`
(digits after the point: 2 for RUB); there is no decimal anywhere. Statuses are snake_case slugs;
every enum the API shows includes `unknown`, which is what a stored value outside the enum (a status
introduced later) reads as.

Tenancy: balance, transactions, subscriptions and invoices are widget records that also carry the
account the widget belonged to when the record was made; the API shows a record only when both match
the token's widget and that widget's current account. Legal entities and withdrawals are
account-wide. No card data is stored anywhere; no API accepts an amount or moves money: operations
staff create these rows in Django admin (or `seed_demo`).
"""

from __future__ import annotations

import re

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils import timezone

from apps.core.models import Account, Widget

UNKNOWN = "unknown"
DEFAULT_CURRENCY = "RUB"
DEFAULT_MINOR_UNIT_SCALE = 2
FEATURE_RE = re.compile(r"[a-z][a-z0-9_]{0,63}")


def known_values(choices: type[models.TextChoices]) -> list[str]:
    """The members of an API enum other than `unknown`."""
    return [value for value in choices.values if value != UNKNOWN]


def slug_or_unknown(value: str, choices: type[models.TextChoices]) -> str:
    """A stored status as the API shows it: a value the enum lacks reads as `unknown`."""
    return value if value in choices.values else UNKNOWN


class Plan(models.Model):
    """What an account pays for; other apps read it through `billing.selectors` (plan_for,
    seats_for, has_feature, ad_cabinet_slots_for, has_premium_skins)."""

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=150)
    is_paid = models.BooleanField(
        default=False, help_text="Connecting messengers and enabling ad cabinets need a paid plan."
    )
    seats = models.PositiveIntegerField(default=3, help_text="Paid human operator seats.")
    paid_features = models.JSONField(
        default=list, blank=True, help_text='Feature slugs the plan includes, e.g. ["messengers", "ai"].'
    )
    ad_cabinet_slots = models.PositiveIntegerField(default=0, help_text="Ad-marketplace cabinets that may be enabled.")
    premium_skins = models.BooleanField(default=False)
    is_default = models.BooleanField(
        default=False, help_text="The plan of an account that has none assigned (at most one plan)."
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["is_default"], condition=Q(is_default=True), name="plan_one_default"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.slug})"

    def clean(self):
        features = self.paid_features
        if not isinstance(features, list) or not all(isinstance(f, str) and FEATURE_RE.fullmatch(f) for f in features):
            raise ValidationError({"paid_features": "A list of snake_case feature slugs."})


class AccountPlan(models.Model):
    """The plan of one account. `extra_seats` are seats bought on top of the plan's."""

    account = models.OneToOneField(Account, on_delete=models.CASCADE, related_name="billing_plan")
    plan = models.ForeignKey(Plan, on_delete=models.PROTECT, related_name="accounts")
    extra_seats = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"account {self.account_id}: {self.plan}"


class LegalEntity(models.Model):
    """A legal entity of the account (all of its widgets share it). Invoices, transactions and
    withdrawals that name it keep it from being deleted (PROTECT; the API answers 409 first)."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="legal_entities")
    short_name = models.CharField(max_length=255)
    full_name = models.CharField(max_length=500)
    representative = models.CharField(max_length=255)
    legal_address = models.CharField(max_length=500)
    postal_address = models.CharField(max_length=500)
    contact_person = models.CharField(max_length=255)
    contact_phone = models.CharField(max_length=32)
    inn = models.CharField(max_length=12)
    kpp = models.CharField(max_length=9)
    ogrn = models.CharField(max_length=15)
    bank_name = models.CharField(max_length=255)
    bik = models.CharField(max_length=9)
    checking_account = models.CharField(max_length=20)
    correspondent_account = models.CharField(max_length=20)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "legal entities"
        indexes = [models.Index(fields=["account", "-created_at"], name="entity_account_created")]

    def __str__(self) -> str:
        return f"{self.short_name} (INN {self.inn})"


class Withdrawal(models.Model):
    """A partner payout to one of the account's legal entities (no API; admin only). While it is
    not paid, cancelled or rejected it locks the entity against PATCH and DELETE."""

    class Status(models.TextChoices):
        PENDING = "pending"
        PROCESSING = "processing"
        PAID = "paid"
        CANCELLED = "cancelled"
        REJECTED = "rejected"

    # Any other status (one introduced later included) keeps the entity locked: fail closed.
    SETTLED = (Status.PAID, Status.CANCELLED, Status.REJECTED)

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="withdrawals")
    legal_entity = models.ForeignKey(LegalEntity, on_delete=models.PROTECT, related_name="withdrawals")
    status = models.CharField(max_length=32, choices=Status.choices, default=Status.PENDING)
    amount_minor = models.BigIntegerField()
    currency = models.CharField(max_length=3, default=DEFAULT_CURRENCY)
    minor_unit_scale = models.PositiveSmallIntegerField(default=DEFAULT_MINOR_UNIT_SCALE)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["legal_entity", "status"], name="withdrawal_entity_status")]

    def __str__(self) -> str:
        return f"withdrawal {self.pk} ({self.status})"

    def clean(self):
        if self.legal_entity_id and self.account_id and self.legal_entity.account_id != self.account_id:
            raise ValidationError({"legal_entity": "The entity belongs to another account."})


class WidgetRecord(models.Model):
    """A billing record of one widget; `account` is the widget's account when it was made."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    currency = models.CharField(max_length=3, default=DEFAULT_CURRENCY)
    minor_unit_scale = models.PositiveSmallIntegerField(default=DEFAULT_MINOR_UNIT_SCALE)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        abstract = True

    def clean(self):
        if self.widget_id and self.account_id and self.widget.account_id != self.account_id:
            raise ValidationError({"account": "Must be the widget's account."})


class Balance(WidgetRecord):
    """The widget's balance; `available_minor` = balance - reserved."""

    balance_minor = models.BigIntegerField(default=0)
    reserved_minor = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["widget"], name="balance_one_per_widget")]

    def __str__(self) -> str:
        return f"balance of widget {self.widget_id}"

    @property
    def available_minor(self) -> int:
        return self.balance_minor - self.reserved_minor


class Transaction(WidgetRecord):
    class Type(models.TextChoices):
        TOP_UP = "top_up"
        SUBSCRIPTION_CHARGE = "subscription_charge"
        REFUND = "refund"
        BONUS = "bonus"
        ADJUSTMENT = "adjustment"
        PARTNER_PAYOUT = "partner_payout"
        UNKNOWN = UNKNOWN

    class State(models.TextChoices):
        PENDING = "pending"
        COMPLETED = "completed"
        FAILED = "failed"
        CANCELLED = "cancelled"
        UNKNOWN = UNKNOWN

    class Direction(models.TextChoices):
        CREDIT = "credit"
        DEBIT = "debit"
        UNKNOWN = UNKNOWN

    type = models.CharField(max_length=32, choices=Type.choices)
    state = models.CharField(max_length=32, choices=State.choices, default=State.COMPLETED)
    direction = models.CharField(max_length=16, choices=Direction.choices)
    amount_minor = models.BigIntegerField(help_text="Positive; `direction` tells credit from debit.")
    description = models.CharField(max_length=500, blank=True, default="")
    invoice = models.ForeignKey("Invoice", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    legal_entity = models.ForeignKey(
        LegalEntity, null=True, blank=True, on_delete=models.PROTECT, related_name="transactions"
    )

    class Meta:
        indexes = [models.Index(fields=["widget", "-created_at", "-id"], name="billing_tx_widget_created")]

    def __str__(self) -> str:
        return f"transaction {self.pk} ({self.type}, {self.direction} {self.amount_minor})"

    def clean(self):
        super().clean()
        if self.legal_entity_id and self.account_id and self.legal_entity.account_id != self.account_id:
            raise ValidationError({"legal_entity": "The entity belongs to another account."})
        if self.invoice_id and self.widget_id and self.invoice.widget_id != self.widget_id:
            raise ValidationError({"invoice": "The invoice belongs to another widget."})


class Subscription(WidgetRecord):
    class Kind(models.TextChoices):
        PRODUCT = "product"
        PACKAGE = "package"
        UNKNOWN = UNKNOWN

    class Status(models.TextChoices):
        TRIAL = "trial"
        ACTIVE = "active"
        PAST_DUE = "past_due"
        CANCELLED = "cancelled"
        EXPIRED = "expired"
        UNKNOWN = UNKNOWN

    kind = models.CharField(max_length=16, choices=Kind.choices)
    status = models.CharField(max_length=32, choices=Status.choices, default=Status.ACTIVE)
    product = models.SlugField(max_length=64, help_text="Product or package code, e.g. `plan_pro`, `ai_replies_1000`.")
    name = models.CharField(max_length=200)
    price_minor = models.BigIntegerField(default=0)
    period_months = models.PositiveSmallIntegerField(default=1)
    started_at = models.DateTimeField(default=timezone.now)
    current_period_end = models.DateTimeField(null=True, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["widget", "-created_at", "-id"], name="billing_sub_widget_created")]

    def __str__(self) -> str:
        return f"{self.name} ({self.status})"


class Invoice(WidgetRecord):
    """An invoice. The API shows bank-transfer invoices against a legal entity only; the document
    is a chats File of the same widget, downloaded through GET /v1/files/{id}."""

    class Status(models.TextChoices):
        ISSUED = "issued"
        PAID = "paid"
        OVERDUE = "overdue"
        CANCELLED = "cancelled"
        UNKNOWN = UNKNOWN

    class PaymentMethod(models.TextChoices):
        BANK_TRANSFER = "bank_transfer"
        CARD = "card"
        OTHER = "other"

    number = models.CharField(max_length=64)
    status = models.CharField(max_length=32, choices=Status.choices, default=Status.ISSUED)
    payment_method = models.CharField(max_length=32, choices=PaymentMethod.choices, default=PaymentMethod.BANK_TRANSFER)
    legal_entity = models.ForeignKey(
        LegalEntity, null=True, blank=True, on_delete=models.PROTECT, related_name="invoices"
    )
    total_minor = models.BigIntegerField(default=0)
    document = models.ForeignKey("core.File", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    issued_at = models.DateTimeField(default=timezone.now)
    due_at = models.DateTimeField(null=True, blank=True)
    paid_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["widget", "-created_at", "-id"], name="billing_inv_widget_created")]

    def __str__(self) -> str:
        return f"invoice {self.number}"

    def clean(self):
        super().clean()
        if self.legal_entity_id and self.account_id and self.legal_entity.account_id != self.account_id:
            raise ValidationError({"legal_entity": "The entity belongs to another account."})
        if self.document_id and self.widget_id and self.document.widget_id != self.widget_id:
            raise ValidationError({"document": "The file belongs to another widget."})


class InvoiceItem(models.Model):
    """A line of an invoice (invoices raised by the legacy admin path have none)."""

    invoice = models.ForeignKey(Invoice, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveSmallIntegerField(default=1)
    description = models.CharField(max_length=500)
    quantity = models.PositiveIntegerField(default=1)
    unit_price_minor = models.BigIntegerField()
    amount_minor = models.BigIntegerField()

    class Meta:
        ordering = ["position", "id"]

    def __str__(self) -> str:
        return f"{self.position}. {self.description}"


# The API enums by name, for SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"] (import strings keep the
# OpenAPI names in step with the models).
TRANSACTION_TYPES = Transaction.Type.values
TRANSACTION_STATES = Transaction.State.values
TRANSACTION_DIRECTIONS = Transaction.Direction.values
SUBSCRIPTION_KINDS = Subscription.Kind.values
SUBSCRIPTION_STATUSES = Subscription.Status.values
INVOICE_STATUSES = Invoice.Status.values
