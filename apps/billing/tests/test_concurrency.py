"""Races with real threads on PostgreSQL: the shared entity write budget and the entity row lock."""

import threading
import time

import pytest

from apps.billing import selectors, services
from apps.billing.models import LegalEntity, Withdrawal
from apps.billing.tests.factories import ENTITY_FIELDS, LegalEntityFactory
from tests.support.concurrency import race
from tests.support.factories import WidgetFactory

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def client_for(token):
    from rest_framework.test import APIClient

    client = APIClient()
    client.raise_request_exception = False
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def test_sixteen_creates_from_two_widgets_of_an_account_admit_exactly_ten(widget, make_token):
    # given two widgets of one account, each with its own token
    sibling = WidgetFactory(account=widget.account)
    tokens = [make_token(widget, ["billing:write"]), make_token(sibling, ["billing:write"])]

    def create(n):
        def work():
            response = client_for(tokens[n % 2]).post(
                "/api/v1/billing/entities", ENTITY_FIELDS, format="json", HTTP_X_SERVICE_IDEMPOTENCY_KEY=f"race-{n}"
            )
            return response.status_code

        return work

    # when
    statuses = race([create(n) for n in range(16)])
    # then
    assert sorted(statuses) == [201] * 10 + [429] * 6, statuses
    assert LegalEntity.objects.filter(account=widget.account).count() == 10


def test_a_withdrawal_and_a_patch_racing_on_one_entity_never_both_win_wrongly(widget, monkeypatch):
    # given an entity, and a lock check slowed down so an unlocked check would lose the race
    entity = LegalEntityFactory(account=widget.account)
    real = selectors.is_locked_by_pending_withdrawal

    def slow(target):
        locked = real(target)
        time.sleep(0.3)
        return locked

    monkeypatch.setattr(selectors, "is_locked_by_pending_withdrawal", slow)

    def patch():
        services.update_legal_entity(account=widget.account, entity=entity, changes={"kpp": "770201001"})
        return "patched"

    def withdraw():
        services.create_withdrawal(account=widget.account, legal_entity=entity, amount_minor=100)
        return "withdrawn"

    # when
    results = race([patch, withdraw])
    # then: both may succeed only in the order patch-then-withdrawal, which the row lock enforces
    assert Withdrawal.objects.filter(legal_entity=entity).count() == 1
    assert results[1] == "withdrawn"
    assert results[0] == "patched" or isinstance(results[0], services.EntityLockedByPendingWithdrawal)


def test_a_delete_racing_a_withdrawal_leaves_no_withdrawal_without_its_entity(widget, monkeypatch):
    entity = LegalEntityFactory(account=widget.account)
    real = selectors.is_referenced_by_financial_record

    def slow(target):
        referenced = real(target)
        time.sleep(0.3)
        return referenced

    monkeypatch.setattr(selectors, "is_referenced_by_financial_record", slow)

    def delete():
        services.delete_legal_entity(account=widget.account, entity=entity)
        return "deleted"

    def withdraw():
        services.create_withdrawal(account=widget.account, legal_entity=entity, amount_minor=100)
        return "withdrawn"

    results = race([delete, withdraw])
    exists = LegalEntity.objects.filter(pk=entity.pk).exists()
    if results[0] == "deleted":
        assert not exists and isinstance(results[1], LegalEntity.DoesNotExist)
        assert not Withdrawal.objects.exists()
    else:
        assert exists and results[1] == "withdrawn"
        assert isinstance(
            results[0], services.EntityLockedByPendingWithdrawal | services.EntityReferencedByFinancialRecord
        )


def test_an_admin_change_racing_a_withdrawal_commits_before_the_withdrawal(widget, admin_client, monkeypatch):
    # given an entity, and a withdrawal that starts while the admin form checks the lock
    entity = LegalEntityFactory(account=widget.account)
    real = selectors.is_locked_by_pending_withdrawal
    checking = threading.Event()

    def slow(target):
        locked = real(target)
        checking.set()
        time.sleep(0.3)
        return locked

    monkeypatch.setattr(selectors, "is_locked_by_pending_withdrawal", slow)
    admin_client.raise_request_exception = False
    body = {name: getattr(entity, name) for name in services.ENTITY_FIELDS}

    def change():
        response = admin_client.post(
            f"/admin/billing/legalentity/{entity.pk}/change/", {**body, "checking_account": "40702810900000000099"}
        )
        return response.status_code

    def withdraw():
        assert checking.wait(timeout=30)
        services.create_withdrawal(account=widget.account, legal_entity=entity, amount_minor=100)
        return "withdrawn"

    # when
    results = race([change, withdraw])
    # then: the form's row lock holds until admin's save commits, so the withdrawal waits for the
    # change (no 500 from a withdrawal slipping in between the form's check and the save)
    assert results == [302, "withdrawn"], results
    entity.refresh_from_db()
    assert entity.checking_account == "40702810900000000099"
    assert entity.updated_at <= Withdrawal.objects.get(legal_entity=entity).created_at
