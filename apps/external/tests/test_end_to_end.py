"""The whole loop: a visitor writes, the AI reply worker hands the message to the widget's external
operator, the engine delivers the signed call to a real HTTPS receiver, the operator answers with
`POST /v1/ai/replies`, and the visitor sees the answer."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from apps.chats import services as chat_services
from apps.chats.models import Message
from apps.chats.tests.factories import ContactFactory
from apps.external.models import Call
from apps.webhooks import services as webhooks

from .factories import SECRET, make_operator

pytestmark = pytest.mark.django_db


def test_a_visitor_message_is_answered_by_the_external_operator(
    widget, api, receiver, triggers, django_capture_on_commit_callbacks
):
    operator = make_operator(widget, receiver.url("/bot"))
    contact = ContactFactory(widget=widget)
    # when the visitor writes (the commit runs the AI reply worker, eager in tests)
    with django_capture_on_commit_callbacks(execute=True):
        message = chat_services.post_client_message(
            widget=widget, contact=contact, data=chat_services.MessageInput(body="Do you ship to Riga?")
        )
    call = Call.objects.get(operator=operator, message=message)
    # then the engine delivers the signed call
    webhooks.deliver_due(concurrency=1)
    [hit] = receiver.wait_for(1)
    expected = "sha256=v1:" + hmac.new(SECRET.encode(), hit.body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(hit.header("x-service-signature"), expected)
    frame = hit.json()
    assert frame["type"] == "chat.assigned" and frame["data"]["text"] == "Do you ship to Riga?"
    # and the operator's reply is the visitor's answer
    response = api(scopes=["responder:inject"]).post(
        "/api/v1/ai/replies",
        {"room_id": frame["data"]["chat_id"], "causation_id": frame["causation_id"], "content": "Yes, in 3 days."},
        format="json",
    )
    assert response.status_code == 202
    answer = Message.objects.get(pk=response.json()["message_id"])
    assert answer.chat_id == call.chat_id and answer.visibility == "public" and answer.agent_id == operator.agent_id
    # no built-in AI answer
    assert not Message.objects.filter(chat_id=call.chat_id, author_kind="ai").exists()
