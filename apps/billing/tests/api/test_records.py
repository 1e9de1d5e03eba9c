"""GET /v1/billing/balance, transactions, subscriptions and invoices: read-only records of the
token's widget that must also name the widget's current account."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.billing.api.serializers import (
    BillingBalanceDoc,
    BillingInvoiceDetailDoc,
    BillingInvoiceDoc,
    BillingInvoiceItemDoc,
    BillingSubscriptionDoc,
    BillingTransactionDoc,
)
from apps.billing.models import Invoice, Subscription, Transaction
from apps.billing.tests.factories import (
    BalanceFactory,
    InvoiceFactory,
    InvoiceItemFactory,
    LegalEntityFactory,
    SubscriptionFactory,
    TransactionFactory,
    make_file,
)
from tests.support.factories import AccountFactory
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

BILLING = "/api/v1/billing"
READ = ["billing:read"]


def ids(response):
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["data"]]


def moved_to_another_account(record):
    """The record names an account its widget no longer belongs to (the widget changed hands)."""
    record.account = AccountFactory()
    record.save(update_fields=["account"])
    return record


# --- balance -----------------------------------------------------------------------------------------------


def test_balance_is_money_in_minor_units(api, widget):
    BalanceFactory(widget=widget, balance_minor=1234567, reserved_minor=34567, currency="RUB")
    body = api(scopes=READ).get(f"{BILLING}/balance").json()
    assert set(body) == set(BillingBalanceDoc().fields)
    assert body["balance_minor"] == 1234567 and body["reserved_minor"] == 34567 and body["available_minor"] == 1200000
    assert body["currency"] == "RUB" and body["minor_unit_scale"] == 2
    assert all(isinstance(body[k], int) for k in ("balance_minor", "reserved_minor", "available_minor"))


def test_no_balance_recorded_reads_as_zero(api):
    body = api(scopes=READ).get(f"{BILLING}/balance").json()
    assert body == {
        "balance_minor": 0,
        "reserved_minor": 0,
        "available_minor": 0,
        "currency": "RUB",
        "minor_unit_scale": 2,
        "updated_at": None,
    }


def test_balance_of_a_sibling_widget_is_not_this_widgets(api, widget, sibling_widget):
    BalanceFactory(widget=sibling_widget, balance_minor=999)
    assert api(scopes=READ).get(f"{BILLING}/balance").json()["balance_minor"] == 0


def test_balance_naming_another_account_is_not_shown(api, widget):
    moved_to_another_account(BalanceFactory(widget=widget, balance_minor=999))
    assert api(scopes=READ).get(f"{BILLING}/balance").json()["balance_minor"] == 0


def test_balance_needs_billing_read(api, client):
    assert_problem(api(scopes=["billing:write", "account:read"]).get(f"{BILLING}/balance"), 403, "missing_scope")
    assert_problem(client.get(f"{BILLING}/balance"), 401)


# --- transactions --------------------------------------------------------------------------------------------


def test_transaction_list_shape_and_order(api, widget):
    # given
    older = TransactionFactory(widget=widget)
    newer = TransactionFactory(widget=widget, type=Transaction.Type.SUBSCRIPTION_CHARGE, direction="debit")
    # when
    response = api(scopes=READ).get(f"{BILLING}/transactions")
    # then
    assert ids(response) == [newer.pk, older.pk] and response.json()["next_cursor"] is None
    row = response.json()["data"][0]
    assert set(row) == set(BillingTransactionDoc().fields)
    assert row["type"] == "subscription_charge" and row["direction"] == "debit" and row["state"] == "completed"
    assert row["amount_minor"] == 500000 and row["currency"] == "RUB" and row["minor_unit_scale"] == 2


def test_transaction_read(api, widget):
    tx = TransactionFactory(widget=widget, description="Пополнение")
    body = api(scopes=READ).get(f"{BILLING}/transactions/{tx.pk}").json()
    assert set(body) == set(BillingTransactionDoc().fields)
    assert body["id"] == tx.pk and body["description"] == "Пополнение" and body["invoice_id"] is None


@pytest.mark.parametrize(
    "query, expected",
    [
        ("type=refund", ["refund"]),
        ("state=pending", ["pending"]),
        ("direction=debit", ["debit"]),
        ("type=refund&direction=credit", []),
    ],
)
def test_transaction_filters_take_slugs(api, widget, query, expected):
    TransactionFactory(widget=widget)
    TransactionFactory(widget=widget, type="refund", direction="debit", state="pending")
    field = query.split("=")[0] if "&" not in query else "type"
    data = api(scopes=READ).get(f"{BILLING}/transactions?{query}").json()["data"]
    assert [row[field] for row in data] == expected


@pytest.mark.parametrize(
    "query",
    [
        "type=TOP_UP",
        "type=top-up",
        "type=1",
        "state=done",
        "state=Completed",
        "direction=in",
        "direction=",
        "type=refund&type=bonus",
        "status=paid",
        "limit=0",
        "limit=101",
        "cursor=forged",
    ],
)
def test_transaction_list_refuses_what_is_not_a_slug_of_the_enum(api, query):
    body = assert_problem(api(scopes=READ).get(f"{BILLING}/transactions?{query}"), 422, "validation_failed")
    assert body["errors"]


def test_a_status_introduced_later_reads_and_filters_as_unknown(api, widget):
    # given a row whose stored state and type the enums do not know yet
    known = TransactionFactory(widget=widget)
    later = TransactionFactory(widget=widget, state="on_hold", type="cashback")
    client = api(scopes=READ)
    # when / then
    row = client.get(f"{BILLING}/transactions/{later.pk}").json()
    assert row["state"] == "unknown" and row["type"] == "unknown"
    assert ids(client.get(f"{BILLING}/transactions?state=unknown")) == [later.pk]
    assert ids(client.get(f"{BILLING}/transactions?type=unknown")) == [later.pk]
    assert ids(client.get(f"{BILLING}/transactions?state=completed")) == [known.pk]


def test_every_billing_enum_includes_unknown():
    for choices in (
        Transaction.Type,
        Transaction.State,
        Transaction.Direction,
        Subscription.Kind,
        Subscription.Status,
        Invoice.Status,
    ):
        assert "unknown" in choices.values
        assert all(v == v.lower() and " " not in v and "-" not in v for v in choices.values)
    for doc, members in (
        (BillingTransactionDoc, ("type", "state", "direction")),
        (BillingSubscriptionDoc, ("kind", "status")),
        (BillingInvoiceDoc, ("status",)),
    ):
        for member in members:
            assert "unknown" in doc().fields[member].choices


def test_transactions_of_a_sibling_widget_are_not_shown(api, widget, sibling_widget):
    mine = TransactionFactory(widget=widget)
    theirs = TransactionFactory(widget=sibling_widget)
    client = api(scopes=READ)
    assert ids(client.get(f"{BILLING}/transactions")) == [mine.pk]
    assert_problem(client.get(f"{BILLING}/transactions/{theirs.pk}"), 404, "not_found")


def test_a_transaction_naming_another_account_is_not_shown(api, widget):
    stale = moved_to_another_account(TransactionFactory(widget=widget))
    client = api(scopes=READ)
    assert ids(client.get(f"{BILLING}/transactions")) == []
    assert_problem(client.get(f"{BILLING}/transactions/{stale.pk}"), 404, "not_found")


def test_a_foreign_transaction_is_the_same_404_as_a_missing_one(api, other_widget):
    foreign = TransactionFactory(widget=other_widget)
    client = api(scopes=READ)
    a = assert_problem(client.get(f"{BILLING}/transactions/{foreign.pk}"), 404)
    b = assert_problem(client.get(f"{BILLING}/transactions/{foreign.pk + 1000}"), 404)
    a.pop("instance"), b.pop("instance")
    assert a == b


def test_transaction_names_its_invoice_only_when_the_invoice_is_shown(api, widget):
    shown = InvoiceFactory(widget=widget)
    hidden = InvoiceFactory(widget=widget, payment_method=Invoice.PaymentMethod.CARD)
    with_shown = TransactionFactory(widget=widget, invoice=shown)
    with_hidden = TransactionFactory(widget=widget, invoice=hidden)
    client = api(scopes=READ)
    assert client.get(f"{BILLING}/transactions/{with_shown.pk}").json()["invoice_id"] == shown.pk
    assert client.get(f"{BILLING}/transactions/{with_hidden.pk}").json()["invoice_id"] is None


def test_transaction_list_pages_with_a_cursor(api, widget):
    made = [TransactionFactory(widget=widget) for _ in range(5)]
    client = api(scopes=READ)
    first = client.get(f"{BILLING}/transactions?limit=2").json()
    second = client.get(f"{BILLING}/transactions?limit=2&cursor={first['next_cursor']}").json()
    third = client.get(f"{BILLING}/transactions?limit=2&cursor={second['next_cursor']}").json()
    seen = [r["id"] for page in (first, second, third) for r in page["data"]]
    assert seen == [t.pk for t in reversed(made)] and third["next_cursor"] is None


def test_transaction_list_has_no_n_plus_one(api, widget):
    client = api(scopes=READ)
    TransactionFactory(widget=widget, invoice=InvoiceFactory(widget=widget))
    client.get(f"{BILLING}/transactions")  # warm: the token's first use records last_used_at
    with CaptureQueriesContext(connection) as one:
        client.get(f"{BILLING}/transactions")
    for _ in range(10):
        TransactionFactory(widget=widget, invoice=InvoiceFactory(widget=widget))
    with CaptureQueriesContext(connection) as many:
        assert len(client.get(f"{BILLING}/transactions").json()["data"]) == 11
    assert len(many) == len(one)


def test_transactions_need_billing_read(api, widget, client):
    tx = TransactionFactory(widget=widget)
    for path in (f"{BILLING}/transactions", f"{BILLING}/transactions/{tx.pk}"):
        assert_problem(api(scopes=["billing:write"]).get(path), 403, "missing_scope")
        assert_problem(client.get(path), 401)


# --- subscriptions --------------------------------------------------------------------------------------------


def test_subscription_list_and_read(api, widget):
    sub = SubscriptionFactory(widget=widget, price_minor=299000)
    client = api(scopes=READ)
    row = client.get(f"{BILLING}/subscriptions").json()["data"][0]
    assert set(row) == set(BillingSubscriptionDoc().fields)
    assert row["id"] == sub.pk and row["kind"] == "product" and row["status"] == "active"
    assert row["price_minor"] == 299000 and row["currency"] == "RUB" and row["minor_unit_scale"] == 2
    assert client.get(f"{BILLING}/subscriptions/{sub.pk}").json() == row


def test_subscription_filters(api, widget):
    product = SubscriptionFactory(widget=widget)
    package = SubscriptionFactory(widget=widget, kind="package", status="cancelled")
    later = SubscriptionFactory(widget=widget, status="paused_by_support")
    client = api(scopes=READ)
    assert ids(client.get(f"{BILLING}/subscriptions?kind=package")) == [package.pk]
    assert ids(client.get(f"{BILLING}/subscriptions?kind=product&status=active")) == [product.pk]
    assert ids(client.get(f"{BILLING}/subscriptions?status=unknown")) == [later.pk]


@pytest.mark.parametrize("query", ["kind=bundle", "status=Active", "status=canceled", "kind=product&kind=package"])
def test_subscription_list_refuses_an_unknown_slug(api, query):
    assert_problem(api(scopes=READ).get(f"{BILLING}/subscriptions?{query}"), 422)


def test_subscriptions_of_a_sibling_widget_or_another_account_are_not_shown(api, widget, sibling_widget):
    mine = SubscriptionFactory(widget=widget)
    theirs = SubscriptionFactory(widget=sibling_widget)
    stale = moved_to_another_account(SubscriptionFactory(widget=widget))
    client = api(scopes=READ)
    assert ids(client.get(f"{BILLING}/subscriptions")) == [mine.pk]
    for record in (theirs, stale):
        assert_problem(client.get(f"{BILLING}/subscriptions/{record.pk}"), 404)


def test_subscriptions_need_billing_read(api, client):
    assert_problem(api(scopes=["account:read"]).get(f"{BILLING}/subscriptions"), 403)
    assert_problem(client.get(f"{BILLING}/subscriptions"), 401)


# --- invoices ----------------------------------------------------------------------------------------------------


def test_invoice_list_shape(api, widget):
    invoice = InvoiceFactory(widget=widget, total_minor=398000)
    row = api(scopes=READ).get(f"{BILLING}/invoices").json()["data"][0]
    assert set(row) == set(BillingInvoiceDoc().fields)
    assert row["id"] == invoice.pk and row["number"] == invoice.number and row["status"] == "issued"
    assert row["legal_entity_id"] == invoice.legal_entity_id and row["total_minor"] == 398000
    assert row["has_document"] is False and row["document_file_id"] is None


def test_invoice_read_has_its_items(api, widget):
    invoice = InvoiceFactory(widget=widget)
    InvoiceItemFactory(invoice=invoice, position=2, description="Место оператора", quantity=2, unit_price_minor=49000)
    InvoiceItemFactory(invoice=invoice, position=1, description="Тариф", quantity=1, unit_price_minor=299000)
    body = api(scopes=READ).get(f"{BILLING}/invoices/{invoice.pk}").json()
    assert set(body) == set(BillingInvoiceDetailDoc().fields)
    assert [i["description"] for i in body["items"]] == ["Тариф", "Место оператора"]
    assert set(body["items"][0]) == set(BillingInvoiceItemDoc().fields)
    assert body["items"][1]["amount_minor"] == 98000 and body["items"][1]["currency"] == "RUB"


def test_an_invoice_of_the_legacy_path_has_no_items(api, widget):
    invoice = InvoiceFactory(widget=widget)
    assert api(scopes=READ).get(f"{BILLING}/invoices/{invoice.pk}").json()["items"] == []


def test_the_document_is_served_through_the_files_endpoint(api, widget, media):
    # given an invoice with a document
    invoice = InvoiceFactory(widget=widget, document=make_file(widget))
    client = api(scopes=["billing:read", "files:read"])
    # when
    body = client.get(f"{BILLING}/invoices/{invoice.pk}").json()
    # then
    assert body["has_document"] is True and body["document_file_id"] == invoice.document_id
    download = client.get(f"/api/v1/files/{body['document_file_id']}")
    assert download.status_code == 302


def test_a_document_of_another_widget_is_not_offered(api, widget, sibling_widget, media):
    invoice = InvoiceFactory(widget=widget, document=make_file(sibling_widget))
    body = api(scopes=READ).get(f"{BILLING}/invoices/{invoice.pk}").json()
    assert body["has_document"] is False and body["document_file_id"] is None


@pytest.mark.parametrize(
    "hidden",
    [
        {"payment_method": Invoice.PaymentMethod.CARD},
        {"payment_method": Invoice.PaymentMethod.OTHER},
        {"legal_entity": None},
    ],
)
def test_only_bank_transfer_invoices_against_a_legal_entity_are_shown(api, widget, hidden):
    shown = InvoiceFactory(widget=widget)
    other = InvoiceFactory(widget=widget, **hidden)
    client = api(scopes=READ)
    assert ids(client.get(f"{BILLING}/invoices")) == [shown.pk]
    assert_problem(client.get(f"{BILLING}/invoices/{other.pk}"), 404)


def test_an_invoice_against_an_entity_of_another_account_is_not_shown(api, widget):
    invoice = InvoiceFactory(widget=widget, legal_entity=LegalEntityFactory())
    assert_problem(api(scopes=READ).get(f"{BILLING}/invoices/{invoice.pk}"), 404)


def test_invoices_of_a_sibling_widget_or_another_account_are_not_shown(api, widget, sibling_widget):
    mine = InvoiceFactory(widget=widget)
    theirs = InvoiceFactory(widget=sibling_widget)
    stale = moved_to_another_account(InvoiceFactory(widget=widget))
    client = api(scopes=READ)
    assert ids(client.get(f"{BILLING}/invoices")) == [mine.pk]
    for record in (theirs, stale):
        assert_problem(client.get(f"{BILLING}/invoices/{record.pk}"), 404)


def test_invoice_status_filter(api, widget):
    issued = InvoiceFactory(widget=widget)
    paid = InvoiceFactory(widget=widget, status="paid")
    later = InvoiceFactory(widget=widget, status="refunded")
    client = api(scopes=READ)
    assert ids(client.get(f"{BILLING}/invoices?status=paid")) == [paid.pk]
    assert ids(client.get(f"{BILLING}/invoices?status=issued")) == [issued.pk]
    assert ids(client.get(f"{BILLING}/invoices?status=unknown")) == [later.pk]
    assert client.get(f"{BILLING}/invoices/{later.pk}").json()["status"] == "unknown"


@pytest.mark.parametrize("query", ["status=PAID", "status=refunded", "status=", "method=card", "number=INV-1"])
def test_invoice_list_refuses_unknown_slugs_and_parameters(api, query):
    assert_problem(api(scopes=READ).get(f"{BILLING}/invoices?{query}"), 422)


def test_invoice_list_has_no_n_plus_one(api, widget, media):
    client = api(scopes=READ)
    InvoiceFactory(widget=widget, document=make_file(widget))
    client.get(f"{BILLING}/invoices")  # warm: the token's first use records last_used_at
    with CaptureQueriesContext(connection) as one:
        client.get(f"{BILLING}/invoices")
    for _ in range(5):
        InvoiceFactory(widget=widget, document=make_file(widget))
    with CaptureQueriesContext(connection) as many:
        assert len(client.get(f"{BILLING}/invoices").json()["data"]) == 6
    assert len(many) == len(one)


def test_invoices_need_billing_read(api, widget, client):
    invoice = InvoiceFactory(widget=widget)
    for path in (f"{BILLING}/invoices", f"{BILLING}/invoices/{invoice.pk}"):
        assert_problem(api(scopes=["billing:write", "files:read"]).get(path), 403)
        assert_problem(client.get(path), 401)


# --- nothing moves money, nothing shows a card ---------------------------------------------------------------------


@pytest.mark.parametrize("path", ["balance", "transactions", "subscriptions", "invoices"])
@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_records_are_read_only(api, widget, path, method):
    response = getattr(api(), method)(f"{BILLING}/{path}", {"amount_minor": 100}, format="json")
    assert_problem(response, 405)


@pytest.mark.parametrize("path", ["transactions", "subscriptions", "invoices"])
@pytest.mark.parametrize("method", ["put", "patch", "delete"])
def test_record_details_are_read_only(api, widget, path, method):
    record = {"transactions": TransactionFactory, "subscriptions": SubscriptionFactory, "invoices": InvoiceFactory}
    pk = record[path](widget=widget).pk
    assert_problem(getattr(api(), method)(f"{BILLING}/{path}/{pk}", {"amount_minor": 1}, format="json"), 405)


def test_no_response_carries_card_data(api, widget, media):
    # given records of every kind, a card-paid invoice among them
    BalanceFactory(widget=widget)
    card = InvoiceFactory(widget=widget, payment_method=Invoice.PaymentMethod.CARD)
    TransactionFactory(widget=widget, invoice=card)
    SubscriptionFactory(widget=widget)
    shown = InvoiceFactory(widget=widget, document=make_file(widget))
    client = api()
    # when
    bodies = [
        client.get(f"{BILLING}/{path}").content.decode().lower()
        for path in ("balance", "transactions", "subscriptions", "invoices", f"invoices/{shown.pk}", "entities")
    ] + [client.get("/api/v1/account").content.decode().lower()]
    # then
    for body in bodies:
        for word in ("card", "pan", "cvv", "cvc", "expiry", "payment_method"):
            assert f'"{word}' not in body and f"_{word}" not in body, (word, body)
