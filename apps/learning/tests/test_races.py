"""Races with real threads on PostgreSQL: tune and wish decisions hold the assistant's row lock."""

import pytest
from rest_framework.test import APIClient

from apps.learning.models import PersonaVersion, TuningCycle, Wish
from apps.learning.tests.conftest import make_evidence
from tests.support.concurrency import race

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def client_for(token):
    client = APIClient()
    client.raise_request_exception = False
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def test_six_tunes_at_once_queue_exactly_one_cycle(widget, make_token, assistant, operator, provider, switch_on):
    make_evidence(widget, operator)
    token = make_token(widget, ["ai:apply"])

    def tune(n):
        return lambda: (
            client_for(token)
            .post("/api/v1/ai/learning/tune", HTTP_X_SERVICE_IDEMPOTENCY_KEY=f"tune-race-{n}")
            .status_code
        )

    statuses = race([tune(n) for n in range(6)])
    assert sorted(statuses) == [202] + [409] * 5, statuses
    assert TuningCycle.objects.count() == 1
    assert PersonaVersion.objects.count() <= 1


def test_approve_and_reject_racing_on_one_wish_one_wins(widget, make_token, assistant, provider):
    from apps.learning import services

    wish = services.submit_wish(widget=widget, assistant=assistant, text="Короче.", token_id=None)
    services.make_wish_proposal(wish_id=wish.pk)
    token = make_token(widget, ["ai:write", "ai:apply"])

    def decide(action, n):
        def work():
            kwargs = {"data": {}, "format": "json"} if action == "approve" else {}
            return (
                client_for(token)
                .post(f"/api/v1/wishes/{wish.pk}/{action}", HTTP_X_SERVICE_IDEMPOTENCY_KEY=f"wish-race-{n}", **kwargs)
                .status_code
            )

        return work

    statuses = race([decide("approve" if n % 2 else "reject", n) for n in range(6)])
    assert sorted(statuses) == [200] + [409] * 5, statuses
    wish.refresh_from_db()
    assert wish.status in ("approved", "rejected")
    assert PersonaVersion.objects.count() == (1 if wish.status == "approved" else 0)
    assert Wish.objects.get().events.filter(action__in=("approved", "rejected")).count() == 1
