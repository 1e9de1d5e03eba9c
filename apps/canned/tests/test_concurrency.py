"""Shortcut uniqueness under concurrency, with real threads on PostgreSQL: concurrent creates of
one shortcut make one row; every other writer answers 409 `shortcut_taken`, never a 500."""

from collections import Counter

import pytest
from rest_framework.test import APIClient

from apps.canned.models import CannedResponse
from apps.canned.tests.factories import CannedResponseFactory
from apps.core import services as core_services
from tests.support.concurrency import race

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _client(widget) -> APIClient:
    client = APIClient()
    client.raise_request_exception = False
    token = core_services.issue_token(widget=widget, scopes=["canned:write"]).plaintext
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def test_concurrent_creates_of_one_shortcut_make_one_row(widget):
    client = _client(widget)

    def create(n):
        def post():
            response = client.post(
                "/api/v1/canned-responses",
                {"shortcut": "same", "title": f"T{n}", "text": "x"},
                format="json",
                HTTP_X_SERVICE_IDEMPOTENCY_KEY=f"race-{n}",
            )
            return response.status_code, response.json().get("code")

        return post

    results = race([create(n) for n in range(8)])
    assert Counter(results) == {(201, None): 1, (409, "shortcut_taken"): 7}, results
    assert CannedResponse.objects.filter(widget=widget, shortcut="same").count() == 1


def test_concurrent_renames_to_one_shortcut_keep_it_unique(widget):
    client = _client(widget)
    rows = [CannedResponseFactory(widget=widget, shortcut=f"r{n}") for n in range(6)]

    def rename(row):
        def patch():
            response = client.patch(
                f"/api/v1/canned-responses/{row.pk}",
                {"shortcut": "same"},
                format="json",
                HTTP_X_SERVICE_IDEMPOTENCY_KEY=f"rename-{row.pk}",
            )
            return response.status_code, response.json().get("code")

        return patch

    results = race([rename(row) for row in rows])
    assert Counter(results) == {(200, None): 1, (409, "shortcut_taken"): 5}, results
    assert CannedResponse.objects.filter(widget=widget, shortcut="same").count() == 1
