"""Billing services and selectors: plans other apps read, the profile write, entity writes and the
records operations staff create."""

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError

from apps.billing import selectors, services
from apps.billing.models import AccountPlan, Invoice, LegalEntity, Plan, Withdrawal
from apps.billing.tests.factories import (
    ENTITY_FIELDS,
    AccountPlanFactory,
    BalanceFactory,
    InvoiceFactory,
    InvoiceItemFactory,
    LegalEntityFactory,
    PlanFactory,
    TransactionFactory,
    WithdrawalFactory,
    make_file,
)
from apps.core.errors import RateLimited
from tests.support.factories import AccountFactory, WidgetFactory

pytestmark = pytest.mark.django_db


# --- plans ----------------------------------------------------------------------------------------------------


def test_plan_for_is_the_assigned_plan(widget):
    plan = PlanFactory()
    AccountPlanFactory(account=widget.account, plan=plan)
    assert services.plan_for(widget.account) == plan


def test_plan_for_falls_back_to_the_default_plan_then_none(widget):
    assert services.plan_for(widget.account).slug == "free"  # the seeded default
    Plan.objects.filter(is_default=True).update(is_default=False)
    assert services.plan_for(widget.account) is None
    default = PlanFactory(is_default=True, is_paid=False)
    assert services.plan_for(widget.account) == default


def test_only_one_plan_can_be_the_default():
    assert Plan.objects.filter(is_default=True).count() == 1  # the seeded `free`
    with pytest.raises(IntegrityError):
        PlanFactory(is_default=True)


def test_seats_for_is_the_plans_seats_plus_extra_seats(widget):
    AccountPlanFactory(account=widget.account, plan=PlanFactory(seats=5), extra_seats=3)
    assert services.seats_for(widget.account) == 8


def test_seats_for_an_account_without_a_plan_is_its_stored_seats(widget):
    widget.account.seats = 4
    widget.account.save()
    assert services.seats_for(widget.account) == 4


def test_assign_plan_keeps_account_seats_in_step(widget):
    # when
    services.assign_plan(account=widget.account, plan=PlanFactory(seats=10), extra_seats=2)
    # then: the core's Account.seats (read by the agents app) follows the plan
    widget.account.refresh_from_db()
    assert widget.account.seats == 12 == services.seats_for(widget.account)


def test_reassigning_replaces_the_plan(widget):
    services.assign_plan(account=widget.account, plan=PlanFactory(seats=10))
    services.assign_plan(account=widget.account, plan=PlanFactory(seats=2))
    widget.account.refresh_from_db()
    assert AccountPlan.objects.filter(account=widget.account).count() == 1 and widget.account.seats == 2


def test_a_plans_new_seat_count_reaches_its_accounts(widget, other_widget):
    plan = PlanFactory(seats=3)
    services.assign_plan(account=widget.account, plan=plan, extra_seats=1)
    services.assign_plan(account=other_widget.account, plan=plan)
    plan.seats = 6
    plan.save()
    assert services.sync_plan_seats(plan=plan) == 2
    widget.account.refresh_from_db()
    other_widget.account.refresh_from_db()
    assert (widget.account.seats, other_widget.account.seats) == (7, 6)


def test_a_plan_change_purges_every_widget_of_the_account(widget, sibling_widget, purges):
    services.assign_plan(account=widget.account, plan=PlanFactory(premium_skins=True))
    purges.clear()
    services.assign_plan(account=widget.account, plan=PlanFactory(premium_skins=False))
    assert sorted(set(purges)) == sorted([widget.pk, sibling_widget.pk])


def test_reassigning_the_same_plan_purges_nothing(widget, purges):
    plan = PlanFactory()
    services.assign_plan(account=widget.account, plan=plan)
    purges.clear()
    services.assign_plan(account=widget.account, plan=plan, extra_seats=3)
    assert purges == []


def test_remove_plan_without_a_default_plan_keeps_no_paid_seats(widget, purges):
    Plan.objects.update(is_default=False)
    services.assign_plan(account=widget.account, plan=PlanFactory(seats=50))
    purges.clear()
    services.remove_plan(account=widget.account)
    widget.account.refresh_from_db()
    assert selectors.plan_for(widget.account) is None
    assert widget.account.seats == 3 and purges


def test_remove_plan_of_an_account_without_one_changes_nothing(widget, purges):
    widget.account.seats = 7
    widget.account.save()
    services.remove_plan(account=widget.account)
    widget.account.refresh_from_db()
    assert widget.account.seats == 7 and purges == []


def test_plan_reads_other_apps_use(widget):
    account = widget.account
    assert not services.has_paid_plan(account) and not services.has_feature(account, "messengers")
    assert services.ad_cabinet_slots_for(account) == 0 and not services.has_premium_skins(account)
    AccountPlanFactory(
        account=account, plan=PlanFactory(is_paid=True, paid_features=["messengers"], ad_cabinet_slots=3)
    )
    assert services.has_paid_plan(account) and services.has_feature(account, "messengers")
    assert not services.has_feature(account, "ai") and services.ad_cabinet_slots_for(account) == 3
    assert services.has_premium_skins(account)


@pytest.mark.parametrize("features", [["ok", "with_digits_2"], []])
def test_plan_features_are_snake_case_slugs(features):
    PlanFactory.build(paid_features=features).clean()


@pytest.mark.parametrize("features", [["Messengers"], ["has space"], ["kebab-case"], [1], "messengers", [""]])
def test_plan_refuses_features_that_are_not_slugs(features):
    with pytest.raises(ValidationError):
        PlanFactory.build(paid_features=features).clean()


# --- account profile ---------------------------------------------------------------------------------------------


def test_update_account_profile_saves_only_what_changed(widget, purges):
    account = services.update_account_profile(widget=widget, changes={"surname": "Ivanova", "phone": ""})
    assert account.surname == "Ivanova" and account.phone == ""
    assert purges == []


def test_update_account_profile_refuses_other_fields(widget):
    with pytest.raises(AssertionError):
        services.update_account_profile(widget=widget, changes={"seats": 100})


def test_a_name_change_purges_every_widget_of_the_account_and_again_on_commit(
    widget, sibling_widget, purges, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        services.update_account_profile(widget=widget, changes={"name": "Renamed"})
    assert sorted(purges) == sorted([widget.pk, sibling_widget.pk])
    for callback in callbacks:
        callback()
    assert sorted(purges) == sorted([widget.pk, sibling_widget.pk] * 2)


# --- legal entities -------------------------------------------------------------------------------------------------


def test_create_legal_entity_needs_all_fourteen_fields(widget):
    with pytest.raises(AssertionError):
        services.create_legal_entity(account=widget.account, fields={"inn": "7701234567"})


def test_entity_writes_charge_one_budget_per_account(widget):
    account = widget.account
    entity = services.create_legal_entity(account=account, fields=dict(ENTITY_FIELDS))
    services.update_legal_entity(account=account, entity=entity, changes={"kpp": "770201001"})
    services.delete_legal_entity(account=account, entity=entity)
    for _ in range(7):
        services.create_legal_entity(account=account, fields=dict(ENTITY_FIELDS))
    with pytest.raises(RateLimited) as refused:
        services.create_legal_entity(account=account, fields=dict(ENTITY_FIELDS))
    assert int(refused.value.headers["Retry-After"]) >= 1
    assert LegalEntity.objects.filter(account=account).count() == 7


def test_an_entity_of_another_account_cannot_be_written(widget, other_widget):
    foreign = LegalEntityFactory(account=other_widget.account)
    with pytest.raises(LegalEntity.DoesNotExist):
        services.update_legal_entity(account=widget.account, entity=foreign, changes={"kpp": "770201001"})
    with pytest.raises(LegalEntity.DoesNotExist):
        services.delete_legal_entity(account=widget.account, entity=foreign)


def test_locks_and_references(widget):
    entity = LegalEntityFactory(account=widget.account)
    assert not selectors.is_locked_by_pending_withdrawal(entity)
    assert not selectors.is_referenced_by_financial_record(entity)
    withdrawal = WithdrawalFactory(legal_entity=entity)
    assert selectors.is_locked_by_pending_withdrawal(entity) and selectors.is_referenced_by_financial_record(entity)
    withdrawal.status = Withdrawal.Status.PAID
    withdrawal.save()
    assert not selectors.is_locked_by_pending_withdrawal(entity)
    with pytest.raises(services.EntityReferencedByFinancialRecord):
        services.delete_legal_entity(account=widget.account, entity=entity)


def test_a_transaction_of_a_sibling_widget_naming_the_entity_keeps_it(widget, sibling_widget):
    entity = LegalEntityFactory(account=widget.account)
    TransactionFactory(widget=sibling_widget, legal_entity=entity)
    with pytest.raises(services.EntityReferencedByFinancialRecord):
        services.delete_legal_entity(account=widget.account, entity=entity)


def test_create_withdrawal_only_for_the_accounts_entity(widget, other_widget):
    entity = LegalEntityFactory(account=widget.account)
    withdrawal = services.create_withdrawal(account=widget.account, legal_entity=entity, amount_minor=100)
    assert withdrawal.status == "pending" and withdrawal.account_id == widget.account_id
    with pytest.raises(LegalEntity.DoesNotExist):
        services.create_withdrawal(account=other_widget.account, legal_entity=entity, amount_minor=100)


# --- records ----------------------------------------------------------------------------------------------------------


def test_create_invoice_totals_its_lines(widget, media):
    entity = LegalEntityFactory(account=widget.account)
    invoice = services.create_invoice(
        widget=widget,
        number="A-1",
        legal_entity=entity,
        document=make_file(widget),
        items=[
            {"description": "Тариф", "quantity": 1, "unit_price_minor": 299000},
            {"description": "Места", "quantity": 3, "unit_price_minor": 49000},
        ],
    )
    assert invoice.total_minor == 446000 and invoice.account_id == widget.account_id
    assert [i.amount_minor for i in invoice.items.all()] == [299000, 147000]
    assert [i.position for i in invoice.items.all()] == [1, 2]


def test_create_invoice_refuses_a_foreign_entity_or_document(widget, other_widget, media):
    with pytest.raises(ValueError):
        services.create_invoice(widget=widget, number="A", legal_entity=LegalEntityFactory(), items=[])
    with pytest.raises(ValueError):
        services.create_invoice(
            widget=widget, number="A", legal_entity=None, items=[], document=make_file(other_widget)
        )


def test_an_invoice_without_lines_keeps_its_total(widget):
    invoice = InvoiceFactory(widget=widget, total_minor=12345)
    assert services.recompute_invoice_total(invoice=invoice).total_minor == 12345
    InvoiceItemFactory(invoice=invoice, quantity=2, unit_price_minor=100)
    assert services.recompute_invoice_total(invoice=invoice).total_minor == 200


def test_store_invoice_document_makes_a_file_of_the_widget(widget, media):
    from django.core.files.base import ContentFile

    file = services.store_invoice_document(
        widget=widget, content=ContentFile(b"%PDF"), name="../../счёт.pdf", content_type="application/pdf", size=4
    )
    assert file.widget_id == widget.pk and file.original_name == "счёт.pdf"


def test_record_clean_refuses_an_account_other_than_the_widgets(widget):
    record = BalanceFactory.build(widget=widget, account=AccountFactory())
    with pytest.raises(ValidationError):
        record.clean()


def test_invoice_clean_refuses_a_foreign_entity_or_document(widget, sibling_widget, media):
    with pytest.raises(ValidationError):
        InvoiceFactory.build(widget=widget, account=widget.account, legal_entity=LegalEntityFactory()).clean()
    invoice = InvoiceFactory.build(
        widget=widget,
        account=widget.account,
        legal_entity=LegalEntityFactory(account=widget.account),
        document=make_file(sibling_widget),
    )
    with pytest.raises(ValidationError):
        invoice.clean()


def test_balance_selector_ignores_a_record_of_another_account(widget):
    BalanceFactory(widget=widget, account=AccountFactory(), balance_minor=5)
    balance = selectors.get_balance(widget=widget)
    assert balance.pk is None and balance.balance_minor == 0


def test_entity_protection_holds_in_the_database(widget):
    entity = LegalEntityFactory(account=widget.account)
    InvoiceFactory(widget=widget, legal_entity=entity)
    from django.db.models import ProtectedError

    with pytest.raises(ProtectedError):
        entity.delete()


def test_exposed_invoices_filter(widget):
    shown = InvoiceFactory(widget=widget)
    InvoiceFactory(widget=widget, payment_method=Invoice.PaymentMethod.CARD)
    InvoiceFactory(widget=widget, legal_entity=None)
    other = WidgetFactory()
    InvoiceFactory(widget=other)
    exposed = selectors.exposed_invoices(Invoice.objects.filter(widget=widget), widget=widget)
    assert list(exposed) == [shown]


def test_plan_str_and_defaults():
    plan = Plan(slug="free", name="Free")
    assert str(plan) == "Free (free)" and plan.seats == 3 and plan.paid_features == []
