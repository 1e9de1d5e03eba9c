"""Django admin, where operations staff create plans, records, entities and withdrawals."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.billing import selectors, services
from apps.billing.models import AccountPlan, Invoice, Plan, Transaction, Withdrawal
from apps.billing.tests.factories import LegalEntityFactory, PlanFactory
from tests.support.factories import AccountFactory

pytestmark = pytest.mark.django_db

ADMIN = "/admin/billing"
STAMP = ("2026-01-01", "10:00:00")


def test_a_transaction_takes_its_widgets_account(admin_client, widget):
    response = admin_client.post(
        f"{ADMIN}/transaction/add/",
        {
            "widget": widget.pk,
            "type": "top_up",
            "state": "completed",
            "direction": "credit",
            "amount_minor": 100000,
            "currency": "RUB",
            "minor_unit_scale": 2,
            "description": "",
            "created_at_0": "2026-01-01",
            "created_at_1": "10:00:00",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    tx = Transaction.objects.get()
    assert tx.account_id == widget.account_id and tx.amount_minor == 100000


def test_a_transaction_naming_an_entity_of_another_account_is_refused(admin_client, widget):
    response = admin_client.post(
        f"{ADMIN}/transaction/add/",
        {
            "widget": widget.pk,
            "type": "refund",
            "state": "completed",
            "direction": "debit",
            "amount_minor": 1,
            "currency": "RUB",
            "minor_unit_scale": 2,
            "legal_entity": LegalEntityFactory(account=AccountFactory()).pk,
            "created_at_0": "2026-01-01",
            "created_at_1": "10:00:00",
        },
    )
    assert response.status_code == 200 and not Transaction.objects.exists()


def test_an_invoice_with_lines_and_an_uploaded_document(admin_client, widget, media):
    # given
    entity = LegalEntityFactory(account=widget.account)
    data = {
        "widget": widget.pk,
        "number": "INV-1",
        "status": "issued",
        "payment_method": "bank_transfer",
        "legal_entity": entity.pk,
        "total_minor": 0,
        "currency": "RUB",
        "minor_unit_scale": 2,
        "issued_at_0": "2026-01-01",
        "issued_at_1": "10:00:00",
        "created_at_0": "2026-01-01",
        "created_at_1": "10:00:00",
        "document_upload": SimpleUploadedFile("invoice.pdf", b"%PDF-1.4", content_type="application/pdf"),
        "items-TOTAL_FORMS": 2,
        "items-INITIAL_FORMS": 0,
        "items-MIN_NUM_FORMS": 0,
        "items-MAX_NUM_FORMS": 1000,
        "items-0-position": 1,
        "items-0-description": "Тариф",
        "items-0-quantity": 1,
        "items-0-unit_price_minor": 299000,
        "items-1-position": 2,
        "items-1-description": "Места",
        "items-1-quantity": 2,
        "items-1-unit_price_minor": 49000,
    }
    # when
    response = admin_client.post(f"{ADMIN}/invoice/add/", data)
    # then
    assert response.status_code == 302, response.content.decode()[:3000]
    invoice = Invoice.objects.get()
    assert invoice.account_id == widget.account_id and invoice.total_minor == 397000
    assert [i.amount_minor for i in invoice.items.all()] == [299000, 98000]
    assert invoice.document.widget_id == widget.pk and invoice.document.original_name == "invoice.pdf"


def test_a_withdrawal_is_created_through_the_service(admin_client, widget):
    entity = LegalEntityFactory(account=widget.account)
    response = admin_client.post(
        f"{ADMIN}/withdrawal/add/",
        {
            "account": widget.account_id,
            "legal_entity": entity.pk,
            "status": "pending",
            "amount_minor": 5000,
            "currency": "RUB",
            "minor_unit_scale": 2,
            "created_at_0": "2026-01-01",
            "created_at_1": "10:00:00",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Withdrawal.objects.get().legal_entity_id == entity.pk


def test_a_withdrawal_to_an_entity_of_another_account_is_refused(admin_client, widget):
    response = admin_client.post(
        f"{ADMIN}/withdrawal/add/",
        {
            "account": widget.account_id,
            "legal_entity": LegalEntityFactory().pk,
            "status": "pending",
            "amount_minor": 5000,
            "currency": "RUB",
            "minor_unit_scale": 2,
            "created_at_0": "2026-01-01",
            "created_at_1": "10:00:00",
        },
    )
    assert response.status_code == 200 and not Withdrawal.objects.exists()


def test_assigning_a_plan_in_admin_sets_the_accounts_seats(admin_client, widget):
    plan = PlanFactory(seats=9)
    response = admin_client.post(
        f"{ADMIN}/accountplan/add/", {"account": widget.account_id, "plan": plan.pk, "extra_seats": 1}
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    widget.account.refresh_from_db()
    assert AccountPlan.objects.get().plan == plan and widget.account.seats == 10


def test_removing_an_accounts_plan_in_admin_puts_it_on_the_default_plans_seats(admin_client, widget):
    # given an account on a 50-seat plan, and the default plan with 3 seats
    default = Plan.objects.get(is_default=True)
    services.assign_plan(account=widget.account, plan=PlanFactory(seats=50))
    assigned = AccountPlan.objects.get(account=widget.account)
    # when staff remove its plan
    response = admin_client.post(f"{ADMIN}/accountplan/{assigned.pk}/delete/", {"post": "yes"})
    # then the account is on the default plan, with that plan's seats, not the 50 it paid for
    assert response.status_code == 302
    widget.account.refresh_from_db()
    assert selectors.plan_for(widget.account) == default
    assert widget.account.seats == selectors.seats_for(widget.account) == default.seats


def test_removing_plans_in_bulk_in_admin_resets_each_accounts_seats(admin_client, widget, other_widget):
    default = Plan.objects.get(is_default=True)
    for account in (widget.account, other_widget.account):
        services.assign_plan(account=account, plan=PlanFactory(seats=50))
    response = admin_client.post(
        f"{ADMIN}/accountplan/",
        {
            "action": "delete_selected",
            "_selected_action": list(AccountPlan.objects.values_list("pk", flat=True)),
            "post": "yes",
        },
    )
    assert response.status_code == 302
    for w in (widget, other_widget):
        w.account.refresh_from_db()
        assert w.account.seats == default.seats


def test_changing_a_plans_seats_in_admin_reaches_its_accounts(admin_client, widget):
    plan = PlanFactory(seats=3, paid_features=["ai"])
    AccountPlan.objects.create(account=widget.account, plan=plan)
    response = admin_client.post(
        f"{ADMIN}/plan/{plan.pk}/change/",
        {
            "slug": plan.slug,
            "name": plan.name,
            "is_paid": "on",
            "seats": 6,
            "paid_features": '["ai"]',
            "ad_cabinet_slots": 0,
            "created_at_0": "2026-01-01",
            "created_at_1": "10:00:00",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    widget.account.refresh_from_db()
    assert widget.account.seats == 6


@pytest.mark.parametrize(
    "model", ["plan", "accountplan", "legalentity", "withdrawal", "balance", "transaction", "subscription", "invoice"]
)
def test_every_admin_page_opens(admin_client, model):
    assert admin_client.get(f"{ADMIN}/{model}/").status_code == 200
    assert admin_client.get(f"{ADMIN}/{model}/add/").status_code == 200


def test_change_pages_open_and_keep_the_widget(admin_client, widget):
    from apps.billing.tests.factories import InvoiceFactory, TransactionFactory, WithdrawalFactory

    for model, record in (
        ("invoice", InvoiceFactory(widget=widget)),
        ("transaction", TransactionFactory(widget=widget)),
        ("withdrawal", WithdrawalFactory(account=widget.account, legal_entity__account=widget.account)),
    ):
        assert admin_client.get(f"{ADMIN}/{model}/{record.pk}/change/").status_code == 200


def test_a_withdrawal_is_settled_in_admin(admin_client, widget):
    from apps.billing.tests.factories import WithdrawalFactory

    withdrawal = WithdrawalFactory(legal_entity__account=widget.account)
    response = admin_client.post(f"{ADMIN}/withdrawal/{withdrawal.pk}/change/", {"status": "paid"})
    assert response.status_code == 302, response.content.decode()[:2000]
    withdrawal.refresh_from_db()
    assert withdrawal.status == "paid"


def entity_form(entity, **changes) -> dict:
    data = {name: getattr(entity, name) for name in services.ENTITY_FIELDS}
    stamps = {f"{name}_{i}": part for name in ("created_at", "updated_at") for i, part in enumerate(STAMP)}
    return {**data, **stamps, **changes}


def test_bank_details_are_not_changed_in_admin_while_a_withdrawal_is_pending(admin_client, widget):
    # given an entity an unpaid withdrawal names
    from apps.billing.tests.factories import WithdrawalFactory

    entity = LegalEntityFactory(account=widget.account)
    WithdrawalFactory(account=widget.account, legal_entity=entity, status="processing")
    # when staff change its checking account
    response = admin_client.post(
        f"{ADMIN}/legalentity/{entity.pk}/change/", entity_form(entity, checking_account="40702810900000000099")
    )
    # then the form names the API's refusal and the details are kept
    assert response.status_code == 200
    assert "entity_locked_by_pending_withdrawal" in response.content.decode()
    entity.refresh_from_db()
    assert entity.checking_account != "40702810900000000099"


def test_bank_details_change_in_admin_once_the_withdrawal_is_paid(admin_client, widget):
    from apps.billing.tests.factories import WithdrawalFactory

    entity = LegalEntityFactory(account=widget.account)
    WithdrawalFactory(account=widget.account, legal_entity=entity, status="paid")
    response = admin_client.post(
        f"{ADMIN}/legalentity/{entity.pk}/change/", entity_form(entity, checking_account="40702810900000000099")
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    entity.refresh_from_db()
    assert entity.checking_account == "40702810900000000099"


def test_an_entity_changed_in_admin_is_checked_as_the_api_checks_it(admin_client, widget):
    entity = LegalEntityFactory(account=widget.account)
    response = admin_client.post(f"{ADMIN}/legalentity/{entity.pk}/change/", entity_form(entity, bik="04452522A"))
    assert response.status_code == 200
    entity.refresh_from_db()
    assert entity.bik != "04452522A"


def test_an_entity_added_in_admin_is_checked_as_the_api_checks_it(admin_client, widget):
    data = {"account": widget.account_id, **entity_form(LegalEntityFactory.build(), inn="77010")}
    response = admin_client.post(f"{ADMIN}/legalentity/add/", data)
    assert response.status_code == 200
    assert not widget.account.legal_entities.exists()
    data["inn"] = "7701000000"
    assert admin_client.post(f"{ADMIN}/legalentity/add/", data).status_code == 302
    assert widget.account.legal_entities.get().inn == "7701000000"


def test_an_entity_never_moves_to_another_account_in_admin(admin_client, widget, other_widget):
    entity = LegalEntityFactory(account=widget.account)
    response = admin_client.post(
        f"{ADMIN}/legalentity/{entity.pk}/change/", {"account": other_widget.account_id, **entity_form(entity)}
    )
    assert response.status_code == 302
    entity.refresh_from_db()
    assert entity.account_id == widget.account_id


def test_admin_entity_writes_spend_none_of_the_accounts_api_budget(admin_client, widget):
    entity = LegalEntityFactory(account=widget.account)
    for n in range(11):
        response = admin_client.post(
            f"{ADMIN}/legalentity/{entity.pk}/change/", entity_form(entity, kpp=f"7701010{n:02d}")
        )
        assert response.status_code == 302, response.content.decode()[:2000]
    services.update_legal_entity(account=widget.account, entity=entity, changes={"kpp": "770101099"})


def test_changing_an_accounts_plan_in_admin_never_reassigns_it_to_another_account(admin_client, widget, other_widget):
    # given an account on a plan, and another account without one
    services.assign_plan(account=widget.account, plan=PlanFactory(seats=5))
    assigned = AccountPlan.objects.get(account=widget.account)
    bigger = PlanFactory(seats=20)
    # when staff change the plan and name the other account in the body
    response = admin_client.post(
        f"{ADMIN}/accountplan/{assigned.pk}/change/",
        {"account": other_widget.account_id, "plan": bigger.pk, "extra_seats": 0},
    )
    # then the change is of this account's plan; the other account gets none
    assert response.status_code == 302, response.content.decode()[:2000]
    assert AccountPlan.objects.get().account_id == widget.account_id
    assert AccountPlan.objects.get().plan == bigger
