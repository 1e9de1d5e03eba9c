"""Support writes: X-Service-Idempotency-Key and X-Service-Agent required, JSON objects with known
keys only, a repeated key is 409 idempotency_key_reused carrying previous."""

from __future__ import annotations

import pytest

from apps.support.models import SupportAction, SupportClaim
from tests.support.plugin import assert_problem


def test_a_write_without_service_agent_is_400_and_changes_nothing(support):
    chat = support.chat()
    response = support.post(f"/api/v1/support/chats/{chat.pk}/claim", {}, agent=None)
    body = assert_problem(response, 400, "invalid_service_agent")
    assert body["reason"] == "invalid_service_agent"
    assert not SupportClaim.objects.exists()


@pytest.mark.parametrize("agent", ["", "Agent", "-agent", "a" * 49, "agent one", "агент"])
def test_a_service_agent_off_the_pattern_is_400(support, agent):
    chat = support.chat()
    response = support.post(f"/api/v1/support/chats/{chat.pk}/claim", {}, agent=agent.encode().decode("latin-1"))
    assert_problem(response, 400, "invalid_service_agent")


def test_a_write_without_idempotency_key_is_400(support):
    chat = support.chat()
    response = support.client.post(
        f"/api/v1/support/chats/{chat.pk}/claim", {}, format="json", HTTP_X_SERVICE_AGENT="agent-1"
    )
    assert_problem(response, 400, "idempotency_key_missing")
    assert not SupportClaim.objects.exists()


@pytest.mark.parametrize(
    "body,path",
    [
        ({"ttl_sec": 300, "surprise": True}, "surprise"),
        ({"ttl_sec": "300"}, "ttl_sec"),
        ({"ttl_sec": 59}, "ttl_sec"),
        ({"ttl_sec": 1801}, "ttl_sec"),
        ({"claim_id": "short"}, "claim_id"),
        ([1, 2], "body"),
        ("text", "body"),
    ],
)
def test_unknown_keys_and_bad_values_are_422(support, body, path):
    chat = support.chat()
    response = support.post(f"/api/v1/support/chats/{chat.pk}/claim", body)
    problem = assert_problem(response, 422)
    assert path in problem["errors"], problem
    assert problem["reason"] == problem["code"]
    assert not SupportClaim.objects.exists()


def test_a_repeated_key_is_409_with_previous_never_a_replay(support):
    chat = support.chat()
    first = support.post(f"/api/v1/support/chats/{chat.pk}/claim", {"ttl_sec": 120}, key="same-key")
    assert first.status_code == 200, first.content
    again = support.post(f"/api/v1/support/chats/{chat.pk}/claim", {"ttl_sec": 120}, key="same-key")
    body = assert_problem(again, 409, "idempotency_key_reused")
    assert body["reason"] == "idempotency_key_reused"
    assert body["previous"]["status"] == 200
    assert SupportClaim.objects.count() == 1


def test_a_refused_write_does_not_burn_its_key(support):
    chat = support.chat()
    bad = support.post(f"/api/v1/support/chats/{chat.pk}/claim", {"ttl_sec": 5}, key="retry-key")
    assert_problem(bad, 422)
    good = support.post(f"/api/v1/support/chats/{chat.pk}/claim", {"ttl_sec": 60}, key="retry-key")
    assert good.status_code == 200


def test_malformed_json_is_400(support):
    chat = support.chat()
    response = support.client.post(
        f"/api/v1/support/chats/{chat.pk}/claim",
        b"{not json",
        content_type="application/json",
        HTTP_X_SERVICE_IDEMPOTENCY_KEY="k",
        HTTP_X_SERVICE_AGENT="agent-1",
    )
    assert_problem(response, 400, "invalid_json")


def test_every_write_and_refusal_is_audited_with_its_agent_and_key(support):
    chat = support.chat()
    support.post(f"/api/v1/support/chats/{chat.pk}/claim", {}, key="a1", agent="bot.one")
    support.post(f"/api/v1/support/chats/{chat.pk}/claim", {}, key="a1", agent="bot.one")
    rows = list(
        SupportAction.objects.order_by("id").values("kind", "outcome", "reason", "service_agent", "idempotency_key")
    )
    assert rows == [
        {"kind": "chats.claim", "outcome": "ok", "reason": "", "service_agent": "bot.one", "idempotency_key": "a1"},
        {
            "kind": "chats.claim",
            "outcome": "refused",
            "reason": "idempotency_key_reused",
            "service_agent": "bot.one",
            "idempotency_key": "a1",
        },
    ]
