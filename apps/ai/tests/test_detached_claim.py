"""The detached test's idempotency claim outside a test transaction (PostgreSQL, autocommit as in
production): a fresh key is one committed INSERT; a reused key is 409 and an expired one is replaced;
the result is recorded after the test."""

import json
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone
from rest_framework.test import APIClient

from apps.ai.tests.factories import AiOperatorFactory, AssistantFactory, CredentialFactory
from apps.core.models import IdempotencyKey
from tests.support.plugin import assert_problem

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _clear_cache():
    cache.clear()
    yield
    cache.clear()


def test_claim_commits_at_once_refuses_reuse_and_replaces_an_expired_row(widget, make_token, request):
    fake = request.getfixturevalue("llm_fake")("openai", text="Two days.")
    assistant = AssistantFactory(widget=widget)
    AiOperatorFactory(assistant=assistant)
    CredentialFactory(widget=widget, api_key=fake.api_key, base_url=fake.base_url, model="gpt-4o-mini")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(widget, ['ai:write'])}")

    def post(key):
        return client.generic(
            "POST",
            f"/api/v1/ai/assistants/{assistant.pk}/test",
            json.dumps({"question": "Delivery?", "operators": "online"}),
            "application/json",
            HTTP_X_SERVICE_IDEMPOTENCY_KEY=key,
        )

    assert post("claim-1").status_code == 200
    row = IdempotencyKey.objects.get(widget=widget, key="claim-1")
    assert row.response_status == 200 and row.method == "POST"
    assert_problem(post("claim-1"), 409, "idempotency_reused")
    assert len(fake.api_requests) == 1

    IdempotencyKey.objects.filter(pk=row.pk).update(created_at=timezone.now() - timedelta(days=2))
    assert post("claim-1").status_code == 200
    assert IdempotencyKey.objects.filter(widget=widget, key="claim-1").count() == 1
    assert len(fake.api_requests) == 2
