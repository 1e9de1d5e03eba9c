"""Per-address limits of the compat routes: requests per minute (503 with Retry-After, which the
legacy senders retry) and unknown path secrets per hour (429 for every compat request of that
address once spent; the lookup is never reached); other addresses are not affected; 0 is off."""

from __future__ import annotations

import json

import pytest

from apps.chats.models import Chat, Message
from apps.compat import services
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

BODY = {"sender": {"id": "2165", "name": "Ivan"}, "recipient": {"id": "r-1"}, "message": {"type": "text", "text": "Hi"}}


@pytest.fixture
def secret(widget, receiver):
    return services.create_compat_channel(widget=widget, url=receiver.url("/chat"))[1]


def send(client, secret, address="203.0.113.7", body=BODY):
    return client.post(
        f"/api/compat/legacy/chat/{secret}", data=json.dumps(body), content_type="application/json", REMOTE_ADDR=address
    )


def status(client, secret, address="203.0.113.7"):
    return client.get(f"/api/compat/legacy/chat/{secret}/status", REMOTE_ADDR=address)


def bot_call(client, token, address="203.0.113.7"):
    body = json.dumps({"event": "INIT_RATE", "chat_id": "1"})
    return client.post(
        f"/api/compat/legacy/bot/{token}", data=body, content_type="application/json", REMOTE_ADDR=address
    )


def test_requests_per_address_per_minute_answer_503_with_retry_after(client, settings, secret):
    settings.COMPAT_REQUESTS_PER_ADDRESS_PER_MINUTE = 3
    assert send(client, secret).status_code == 202
    assert status(client, secret).status_code == 200
    assert send(client, secret).status_code == 202
    refused = send(client, secret)
    body = assert_problem(refused, 503, "compat_throttled")
    assert int(refused["Retry-After"]) >= 1 and "3" in body["detail"]
    assert Message.objects.count() == 2  # the refused message stored nothing
    assert send(client, secret, address="198.51.100.9").status_code == 202  # another address


def test_unknown_secrets_spend_the_address_and_then_everything_is_429(client, settings, secret):
    settings.COMPAT_UNKNOWN_SECRETS_PER_ADDRESS_PER_HOUR = 2
    assert_problem(send(client, "f" * 48), 404)
    assert_problem(bot_call(client, "e" * 48), 401)
    refused = send(client, secret)  # even the right secret: the address is refused for a while
    assert_problem(refused, 429, "too_many_unknown_secrets")
    assert int(refused["Retry-After"]) > 60
    assert_problem(status(client, secret), 429)
    assert not Chat.objects.exists()
    assert send(client, secret, address="198.51.100.9").status_code == 202


def test_known_secrets_and_other_refusals_do_not_count_as_guesses(client, settings, secret):
    settings.COMPAT_UNKNOWN_SECRETS_PER_ADDRESS_PER_HOUR = 2
    for _ in range(4):
        assert_problem(send(client, secret, body={"sender": {}}), 422)
    assert send(client, secret).status_code == 202


def test_zero_turns_the_limits_off(client, settings, secret):
    settings.COMPAT_REQUESTS_PER_ADDRESS_PER_MINUTE = 0
    settings.COMPAT_UNKNOWN_SECRETS_PER_ADDRESS_PER_HOUR = 0
    for _ in range(5):
        assert_problem(send(client, "f" * 48), 404)
    assert send(client, secret).status_code == 202
