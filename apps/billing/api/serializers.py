"""Account and billing: output builders, the `...Doc` serializers describing the same shapes for
OpenAPI (tests keep the two in step), and the strict `XInput` / `XQuery` serializers."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.core.api.query import query_data  # noqa: F401 (used by the views as s.query_data)
from apps.core.api.serializers import InputSerializer, LabelMixin, StrictCharField, StrictStringMixin
from apps.core.models import Account

from ..models import Balance, Invoice, LegalEntity, Plan, Subscription, Transaction, slug_or_unknown

PHONE_MAX = 32
PHONE_PATTERN = r"^\+?[0-9][0-9 ()\-]*$"
_PHONE_RE = re.compile(r"\+?[0-9][0-9 ()\-]*")  # fullmatch: `$` would admit a trailing newline
# As documented for the account: the empty string (clears the phone) or a number.
PHONE_PATTERN_OR_EMPTY = r"^(?:\+?[0-9][0-9 ()\-]*)?$"

MONEY_HELP = "Integer in minor units; divide by 10^minor_unit_scale for the major unit."


def _iso(value):
    return value.isoformat() if value is not None else None


def has_control_characters(text: str) -> bool:
    """C0/C1 controls (tab and newline included) and the Unicode line and paragraph separators."""
    return any(unicodedata.category(ch) == "Cc" or ch in "\u2028\u2029" for ch in text)


# --- output builders -------------------------------------------------------------------------------------


def plan_payload(plan: Plan | None) -> dict | None:
    if plan is None:
        return None
    return {
        "slug": plan.slug,
        "name": plan.name,
        "is_paid": plan.is_paid,
        "seats": plan.seats,
        "paid_features": list(plan.paid_features or []),
        "ad_cabinet_slots": plan.ad_cabinet_slots,
        "premium_skins": plan.premium_skins,
    }


def legal_entity_payload(entity: LegalEntity) -> dict:
    return {
        "id": entity.pk,
        "short_name": entity.short_name,
        "full_name": entity.full_name,
        "representative": entity.representative,
        "legal_address": entity.legal_address,
        "postal_address": entity.postal_address,
        "contact_person": entity.contact_person,
        "contact_phone": entity.contact_phone,
        "inn": entity.inn,
        "kpp": entity.kpp,
        "ogrn": entity.ogrn,
        "bank_name": entity.bank_name,
        "bik": entity.bik,
        "checking_account": entity.checking_account,
        "correspondent_account": entity.correspondent_account,
        "created_at": _iso(entity.created_at),
        "updated_at": _iso(entity.updated_at),
    }


def account_payload(account: Account, *, plan: Plan | None, seats: int, legal_entities) -> dict:
    return {
        "id": account.pk,
        "email": account.email,
        "name": account.name,
        "surname": account.surname,
        "phone": account.phone,
        "plan": plan_payload(plan),
        "seats": seats,
        "legal_entities": [legal_entity_payload(e) for e in legal_entities],
        "created_at": _iso(account.created_at),
    }


def balance_payload(balance: Balance) -> dict:
    return {
        "balance_minor": balance.balance_minor,
        "reserved_minor": balance.reserved_minor,
        "available_minor": balance.available_minor,
        "currency": balance.currency,
        "minor_unit_scale": balance.minor_unit_scale,
        "updated_at": _iso(balance.updated_at) if balance.pk else None,
    }


def _exposed_invoice_id(transaction: Transaction) -> int | None:
    """The transaction's invoice id, only when the API shows that invoice."""
    invoice = transaction.invoice
    if invoice is None or invoice.payment_method != Invoice.PaymentMethod.BANK_TRANSFER:
        return None
    if invoice.legal_entity_id is None or invoice.account_id != transaction.account_id:
        return None
    return invoice.pk


def transaction_payload(transaction: Transaction) -> dict:
    """Needs `invoice` selected (select_related)."""
    return {
        "id": transaction.pk,
        "type": slug_or_unknown(transaction.type, Transaction.Type),
        "state": slug_or_unknown(transaction.state, Transaction.State),
        "direction": slug_or_unknown(transaction.direction, Transaction.Direction),
        "amount_minor": transaction.amount_minor,
        "currency": transaction.currency,
        "minor_unit_scale": transaction.minor_unit_scale,
        "description": transaction.description,
        "invoice_id": _exposed_invoice_id(transaction),
        "legal_entity_id": transaction.legal_entity_id,
        "created_at": _iso(transaction.created_at),
    }


def subscription_payload(subscription: Subscription) -> dict:
    return {
        "id": subscription.pk,
        "kind": slug_or_unknown(subscription.kind, Subscription.Kind),
        "status": slug_or_unknown(subscription.status, Subscription.Status),
        "product": subscription.product,
        "name": subscription.name,
        "price_minor": subscription.price_minor,
        "currency": subscription.currency,
        "minor_unit_scale": subscription.minor_unit_scale,
        "period_months": subscription.period_months,
        "started_at": _iso(subscription.started_at),
        "current_period_end": _iso(subscription.current_period_end),
        "cancelled_at": _iso(subscription.cancelled_at),
        "created_at": _iso(subscription.created_at),
    }


def _document_file_id(invoice: Invoice) -> int | None:
    """The document's file id when the token's widget can download it (a file of the same widget)."""
    document = invoice.document
    if document is None or document.widget_id != invoice.widget_id:
        return None
    return document.pk


def invoice_payload(invoice: Invoice, *, with_items: bool = False) -> dict:
    """Needs `document` selected; with items, `items` prefetched."""
    document_file_id = _document_file_id(invoice)
    payload = {
        "id": invoice.pk,
        "number": invoice.number,
        "status": slug_or_unknown(invoice.status, Invoice.Status),
        "legal_entity_id": invoice.legal_entity_id,
        "total_minor": invoice.total_minor,
        "currency": invoice.currency,
        "minor_unit_scale": invoice.minor_unit_scale,
        "issued_at": _iso(invoice.issued_at),
        "due_at": _iso(invoice.due_at),
        "paid_at": _iso(invoice.paid_at),
        "has_document": document_file_id is not None,
        "document_file_id": document_file_id,
        "created_at": _iso(invoice.created_at),
    }
    if with_items:
        payload["items"] = [
            {
                "position": item.position,
                "description": item.description,
                "quantity": item.quantity,
                "unit_price_minor": item.unit_price_minor,
                "amount_minor": item.amount_minor,
                "currency": invoice.currency,
                "minor_unit_scale": invoice.minor_unit_scale,
            }
            for item in invoice.items.all()
        ]
    return payload


# --- documentation of output shapes ----------------------------------------------------------------------


class MoneyDocMixin(serializers.Serializer):
    currency = serializers.CharField(help_text="ISO 4217 code, e.g. RUB.")
    minor_unit_scale = serializers.IntegerField(help_text="Digits after the point: 2 means 12345 is 123.45.")


class PlanDoc(serializers.Serializer):
    slug = serializers.CharField(help_text="The plan's slug.")
    name = serializers.CharField(help_text="The plan's name.")
    is_paid = serializers.BooleanField(help_text="True for a paid plan.")
    seats = serializers.IntegerField(help_text="Paid human operator seats of the plan.")
    paid_features = serializers.ListField(child=serializers.CharField(), help_text="Feature slugs.")
    ad_cabinet_slots = serializers.IntegerField(help_text="How many ad-marketplace cabinets the plan lets be enabled.")
    premium_skins = serializers.BooleanField(help_text="True when the plan includes the premium widget skins.")


class LegalEntityDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The legal entity's id.")
    short_name = serializers.CharField(help_text="The entity's short name.")
    full_name = serializers.CharField(help_text="The entity's full name.")
    representative = serializers.CharField(help_text="The entity's representative.")
    legal_address = serializers.CharField(help_text="The entity's legal address.")
    postal_address = serializers.CharField(help_text="The entity's postal address.")
    contact_person = serializers.CharField(help_text="The contact person's name.")
    contact_phone = serializers.CharField(help_text="The contact person's phone number.")
    inn = serializers.CharField(help_text="10 or 12 digits.")
    kpp = serializers.CharField(help_text="9 digits.")
    ogrn = serializers.CharField(help_text="13 or 15 digits.")
    bank_name = serializers.CharField(help_text="The bank's name.")
    bik = serializers.CharField(help_text="9 digits.")
    checking_account = serializers.CharField(help_text="20 digits.")
    correspondent_account = serializers.CharField(help_text="20 digits.")
    created_at = serializers.DateTimeField(help_text="When the entity was created.")
    updated_at = serializers.DateTimeField(help_text="When the entity was last changed.")


class AccountDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The account's id.")
    email = serializers.CharField(help_text="Read-only.")
    name = serializers.CharField(allow_blank=True, help_text="The account owner's name; writable.")
    surname = serializers.CharField(allow_blank=True, help_text="The account owner's surname; writable.")
    phone = serializers.CharField(allow_blank=True, help_text="The account's phone number; writable.")
    plan = PlanDoc(allow_null=True, help_text="The account's plan (null when none is configured).")
    seats = serializers.IntegerField(help_text="Paid human operator seats of the account.")
    legal_entities = LegalEntityDoc(
        many=True, help_text="Every legal entity of the account, its other widgets' included."
    )
    created_at = serializers.DateTimeField(help_text="When the account was created.")


class BillingBalanceDoc(MoneyDocMixin):
    balance_minor = serializers.IntegerField(help_text=MONEY_HELP)
    reserved_minor = serializers.IntegerField(help_text=MONEY_HELP)
    available_minor = serializers.IntegerField(help_text="balance_minor - reserved_minor.")
    updated_at = serializers.DateTimeField(allow_null=True, help_text="Null while nothing is recorded.")


class BillingTransactionDoc(MoneyDocMixin):
    id = serializers.IntegerField(help_text="The transaction's id.")
    type = serializers.ChoiceField(
        choices=Transaction.Type.values,
        help_text="The transaction's type, a snake_case slug; `unknown` for a type introduced later.",
    )
    state = serializers.ChoiceField(
        choices=Transaction.State.values,
        help_text="The transaction's state, a snake_case slug; `unknown` for a state introduced later.",
    )
    direction = serializers.ChoiceField(
        choices=Transaction.Direction.values,
        help_text="`credit` or `debit`; `unknown` for a value introduced later.",
    )
    amount_minor = serializers.IntegerField(help_text=f"Positive; `direction` tells credit from debit. {MONEY_HELP}")
    description = serializers.CharField(allow_blank=True, help_text="The transaction's description; empty when none.")
    invoice_id = serializers.IntegerField(allow_null=True, help_text="Set when the invoice is one this API shows.")
    legal_entity_id = serializers.IntegerField(
        allow_null=True, help_text="The legal entity the transaction names; null when none."
    )
    created_at = serializers.DateTimeField(help_text="When the transaction was recorded.")


class BillingSubscriptionDoc(MoneyDocMixin):
    id = serializers.IntegerField(help_text="The subscription's id.")
    kind = serializers.ChoiceField(
        choices=Subscription.Kind.values,
        help_text="The subscription's kind, a snake_case slug; `unknown` for a kind introduced later.",
    )
    status = serializers.ChoiceField(
        choices=Subscription.Status.values,
        help_text="The subscription's status, a snake_case slug; `unknown` for a status introduced later.",
    )
    product = serializers.CharField(help_text="Product or package code.")
    name = serializers.CharField(help_text="The subscription's name.")
    price_minor = serializers.IntegerField(help_text=f"Price per period. {MONEY_HELP}")
    period_months = serializers.IntegerField(help_text="The length of one billing period, in months.")
    started_at = serializers.DateTimeField(help_text="When the subscription started.")
    current_period_end = serializers.DateTimeField(
        allow_null=True, help_text="When the current period ends; null when none is running."
    )
    cancelled_at = serializers.DateTimeField(
        allow_null=True, help_text="When the subscription was cancelled; null unless cancelled."
    )
    created_at = serializers.DateTimeField(help_text="When the subscription was recorded.")


class BillingInvoiceDoc(MoneyDocMixin):
    id = serializers.IntegerField(help_text="The invoice's id.")
    number = serializers.CharField(help_text="The invoice's number.")
    status = serializers.ChoiceField(
        choices=Invoice.Status.values,
        help_text="The invoice's status, a snake_case slug; `unknown` for a status introduced later.",
    )
    legal_entity_id = serializers.IntegerField(help_text="The legal entity billed (bank transfer).")
    total_minor = serializers.IntegerField(help_text=MONEY_HELP)
    issued_at = serializers.DateTimeField(help_text="When the invoice was issued.")
    due_at = serializers.DateTimeField(allow_null=True, help_text="When payment is due; null when no date is set.")
    paid_at = serializers.DateTimeField(allow_null=True, help_text="When the invoice was paid; null until then.")
    has_document = serializers.BooleanField(help_text="A document exists; download it with GET /v1/files/{id}.")
    document_file_id = serializers.IntegerField(allow_null=True, help_text="The document's id for GET /v1/files/{id}.")
    created_at = serializers.DateTimeField(help_text="When the invoice was recorded.")


class BillingInvoiceItemDoc(MoneyDocMixin):
    position = serializers.IntegerField(help_text="The item's position on the invoice.")
    description = serializers.CharField(help_text="What the item is.")
    quantity = serializers.IntegerField(help_text="How many units.")
    unit_price_minor = serializers.IntegerField(help_text=MONEY_HELP)
    amount_minor = serializers.IntegerField(help_text=f"quantity x unit_price_minor. {MONEY_HELP}")


class BillingInvoiceDetailDoc(BillingInvoiceDoc):
    items = BillingInvoiceItemDoc(many=True, help_text="Empty for invoices raised by the legacy admin path.")


# --- inputs -------------------------------------------------------------------------------------------------


class CleanTextField(StrictCharField):
    """A string (never a number coerced to one) without control characters; surrounding whitespace
    is removed and the length is checked on the rest."""

    default_error_messages = {"control": "Must not contain control characters."}

    def to_internal_value(self, data):
        if isinstance(data, str) and has_control_characters(data):
            self.fail("control")
        return super().to_internal_value(data)


class _PatternField(StrictStringMixin, serializers.Field):
    """A JSON string matched whole against `regex` (ASCII digits only); nothing is coerced."""

    regex: re.Pattern
    default_error_messages = {"invalid": "Invalid value."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("not_string")
        if not self.regex.fullmatch(data):
            self.fail("invalid")
        return data

    def to_representation(self, value):
        return value


def digits_field(*lengths: int, **kwargs) -> _PatternField:
    """A field of 0-9 digits of exactly one of `lengths`, sent as a JSON string."""
    alternatives = "|".join(f"[0-9]{{{n}}}" for n in lengths)
    pattern = f"^(?:{alternatives})$"
    words = " or ".join(str(n) for n in lengths)
    message = f"Must be a string of exactly {words} digits."

    @extend_schema_field({"type": "string", "pattern": pattern, "description": f"Exactly {words} digits, as a string."})
    class DigitsField(_PatternField):
        regex = re.compile(alternatives)
        default_error_messages = {"invalid": message}

    return DigitsField(**kwargs)


@extend_schema_field({"type": "string", "pattern": PHONE_PATTERN, "maxLength": PHONE_MAX})
class PhoneField(_PatternField):
    regex = _PHONE_RE
    allow_empty = False
    default_error_messages = {
        "invalid": "Digits, spaces, parentheses and hyphens after an optional leading +.",
        "max_length": f"At most {PHONE_MAX} characters.",
    }

    def to_internal_value(self, data):
        if data == "" and self.allow_empty:
            return ""
        value = super().to_internal_value(data)
        if len(value) > PHONE_MAX:
            self.fail("max_length")
        return value.strip()


@extend_schema_field({"type": "string", "pattern": PHONE_PATTERN_OR_EMPTY, "maxLength": PHONE_MAX})
class ClearablePhoneField(PhoneField):
    """The account phone: a number, or "" (like null) to clear it."""

    allow_empty = True


class NameTextField(LabelMixin, CleanTextField):
    """A person's or an organisation's name: NFC, no invisible or bidirectional-control characters."""


def _entity_text(max_length: int, **kwargs) -> CleanTextField:
    return CleanTextField(max_length=max_length, **kwargs)


def _entity_name(max_length: int, **kwargs) -> NameTextField:
    return NameTextField(max_length=max_length, **kwargs)


class LegalEntityInput(InputSerializer):
    """All fourteen fields on create; any subset on PATCH. Identifiers and account numbers are
    digits-only strings of an exact length (a JSON number is refused)."""

    id = serializers.IntegerField(read_only=True)
    short_name = _entity_name(255, help_text="The entity's short name, up to 255 characters.")
    full_name = _entity_name(500, help_text="The entity's full name, up to 500 characters.")
    representative = _entity_name(255, help_text="The entity's representative, up to 255 characters.")
    legal_address = _entity_text(500, help_text="The entity's legal address, up to 500 characters.")
    postal_address = _entity_text(500, help_text="The entity's postal address, up to 500 characters.")
    contact_person = _entity_name(255, help_text="The contact person's name, up to 255 characters.")
    contact_phone = PhoneField(
        help_text=(
            "The contact person's phone: an optional leading `+`, a digit, then digits, spaces, parentheses or "
            "hyphens, up to 32 characters."
        )
    )
    inn = digits_field(10, 12)
    kpp = digits_field(9)
    ogrn = digits_field(13, 15)
    bank_name = _entity_name(255, help_text="The bank's name, up to 255 characters.")
    bik = digits_field(9)
    checking_account = digits_field(20)
    correspondent_account = digits_field(20)
    created_at = serializers.DateTimeField(read_only=True)
    updated_at = serializers.DateTimeField(read_only=True)


# Members an account PATCH refuses by name, with the reason.
_NOT_BY_API = "cannot be changed through the API."
REFUSED_ACCOUNT_MEMBERS = {
    "email": f"The e-mail {_NOT_BY_API}",
    "password": f"The password {_NOT_BY_API}",
    "legal_entities": "Read-only here; manage legal entities through /v1/billing/entities.",
    **{
        name: "The account cannot be deleted through the API."
        for name in ("delete", "deleted", "is_deleted", "deleted_at", "is_active")
    },
}


class AccountPatchInput(InputSerializer):
    """Only the members sent change; null (or "") clears. e-mail, password, deletion and
    `legal_entities` are refused by name (422), as is every other member."""

    id = serializers.IntegerField(read_only=True)
    name = NameTextField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=150,
        help_text="The account owner's name; null or empty clears it.",
    )
    surname = NameTextField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=150,
        help_text="The account owner's surname; null or empty clears it.",
    )
    phone = ClearablePhoneField(
        required=False,
        allow_null=True,
        help_text=(
            "An optional leading `+`, a digit, then digits, spaces, parentheses or hyphens, up to 32 characters; null"
            " or empty clears it."
        ),
    )
    plan = serializers.JSONField(read_only=True)
    seats = serializers.IntegerField(read_only=True)
    created_at = serializers.DateTimeField(read_only=True)

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            refused = {name: [REFUSED_ACCOUNT_MEMBERS[name]] for name in data if name in REFUSED_ACCOUNT_MEMBERS}
            if refused:
                rest = {name: value for name, value in data.items() if name not in REFUSED_ACCOUNT_MEMBERS}
                try:
                    super().to_internal_value(rest)
                except serializers.ValidationError as exc:
                    if isinstance(exc.detail, dict):
                        refused.update(exc.detail)
                raise serializers.ValidationError(refused)
        return super().to_internal_value(data)

    def validate(self, attrs):
        return {name: ("" if value is None else value) for name, value in attrs.items()}


# --- queries --------------------------------------------------------------------------------------------------


def _slug_filter(choices, what: str) -> serializers.ChoiceField:
    return serializers.ChoiceField(
        choices=choices.values, required=False, help_text=f"{what}; `unknown` matches statuses introduced later."
    )


class EmptyQuery(InputSerializer):
    """No parameters besides `cursor` and `limit`."""


class TransactionListQuery(InputSerializer):
    type = _slug_filter(Transaction.Type, "Transaction type")
    state = _slug_filter(Transaction.State, "Transaction state")
    direction = _slug_filter(Transaction.Direction, "credit or debit")


class SubscriptionListQuery(InputSerializer):
    status = _slug_filter(Subscription.Status, "Subscription status")
    kind = _slug_filter(Subscription.Kind, "product or package")


class InvoiceListQuery(InputSerializer):
    status = _slug_filter(Invoice.Status, "Invoice status")
