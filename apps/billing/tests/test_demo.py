"""seed_demo_billing: demo records the API shows, safe to run twice."""

import pytest

from apps.billing.demo import seed_demo_billing
from apps.billing.models import Invoice, LegalEntity, Subscription, Transaction

pytestmark = pytest.mark.django_db


def test_demo_records_are_served_by_the_api(api, widget, media):
    # when
    seeded = seed_demo_billing(widget)
    client = api(scopes=["billing:read", "account:read", "files:read"])
    # then
    assert client.get("/api/v1/billing/balance").json()["available_minor"] == 1_200_000
    assert len(client.get("/api/v1/billing/transactions").json()["data"]) == 3
    assert len(client.get("/api/v1/billing/subscriptions").json()["data"]) == 1
    invoice = client.get(f"/api/v1/billing/invoices/{seeded['invoice_id']}").json()
    assert invoice["has_document"] and len(invoice["items"]) == 2 and invoice["total_minor"] == 397_000
    assert client.get(f"/api/v1/files/{invoice['document_file_id']}").status_code == 302
    account = client.get("/api/v1/account").json()
    assert account["plan"]["slug"] == "demo_pro" and account["seats"] == 5
    assert [e["id"] for e in account["legal_entities"]] == [seeded["legal_entity_id"]]


def test_seeding_twice_changes_nothing(widget, media):
    first = seed_demo_billing(widget)
    counts = [m.objects.count() for m in (Invoice, LegalEntity, Subscription, Transaction)]
    assert seed_demo_billing(widget) == first
    assert [m.objects.count() for m in (Invoice, LegalEntity, Subscription, Transaction)] == counts
