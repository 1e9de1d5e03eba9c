"""Labels under concurrency, with real threads on PostgreSQL: concurrent creates of one name in any
case make one label (every other writer 409 `label_taken`, never a 500); concurrent writers of one
chat's labels serialise on the chat's row, each emitting only a change it made."""

from collections import Counter

import pytest
from rest_framework.test import APIClient

from apps.chats import services
from apps.chats.models import ChatLabel, Label
from apps.chats.tests.factories import ChatFactory
from apps.core import services as core_services
from apps.core.models import OutboxEvent
from tests.support.concurrency import race

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _client(widget) -> APIClient:
    client = APIClient()
    client.raise_request_exception = False
    token = core_services.issue_token(widget=widget, scopes=["labels:write"]).plaintext
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def test_concurrent_creates_of_one_name_in_any_case_make_one_label(widget):
    client = _client(widget)

    def create(n):
        def post():
            response = client.post(
                "/api/v1/labels",
                {"name": "refund".upper() if n % 2 else "Refund"},
                format="json",
                HTTP_X_SERVICE_IDEMPOTENCY_KEY=f"race-label-{n}",
            )
            return response.status_code, response.json().get("code")

        return post

    results = race([create(n) for n in range(6)])

    assert Counter(results) == Counter({(201, None): 1, (409, "label_taken"): 5})
    assert Label.objects.filter(widget=widget).count() == 1


def test_concurrent_adds_to_one_chat_each_emit_their_own_change(widget):
    chat = ChatFactory(widget=widget, contact__widget=widget)
    names = [f"l{n}" for n in range(6)]
    for name in names:
        services.create_label(widget=widget, name=name)

    def add(name):
        return lambda: services.add_chat_labels(widget=widget, chat=chat, names=[name], by="api")

    race([add(name) for name in names])

    assert ChatLabel.objects.filter(chat=chat).count() == 6
    sizes = sorted(len(e.data["labels"]) for e in OutboxEvent.objects.filter(type="chat.labels_changed"))
    assert sizes == [1, 2, 3, 4, 5, 6]  # each saw the ones committed before it: no change lost or doubled
