"""Races with real threads on PostgreSQL: 20 callbacks carrying one causation id post one message
(the other 19 are 409 `causation_consumed`); an agent restored while its operator is revoked ends
banned."""

from __future__ import annotations

from collections import Counter

import pytest
from rest_framework.test import APIClient

from apps.agents import services as agent_services
from apps.agents.models import Agent
from apps.chats.models import Message
from apps.core import services as core_services
from apps.external import services
from apps.external.models import Call
from apps.webhooks import delivery as engine
from tests.support.concurrency import race

from .factories import make_operator, visitor_message

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_twenty_concurrent_replies_with_one_causation_post_one_message(widget, monkeypatch):
    monkeypatch.setattr(engine.sweep, "trigger", lambda countdown=None: None)
    operator = make_operator(widget)
    message = visitor_message(widget)
    services.dispatch_visitor_message(chat=message.chat, message=message)
    call = Call.objects.get(operator=operator, message=message)
    token = core_services.issue_token(widget=widget, scopes=["responder:inject"]).plaintext
    body = {"room_id": call.chat_id, "causation_id": str(call.causation_id), "content": "One answer."}

    def post():
        client = APIClient()
        client.raise_request_exception = False
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        response = client.post("/api/v1/ai/replies", body, format="json")
        return response.status_code, response.json().get("code")

    results = race([post] * 20)
    assert Counter(results) == {(202, None): 1, (409, "causation_consumed"): 19}, results
    assert Message.objects.filter(chat_id=call.chat_id, agent_id=operator.agent_id).count() == 1
    assert Call.objects.get(pk=call.pk).outcome == "posted"


def test_a_restore_racing_the_revocation_leaves_the_agent_banned(widget):
    # given operators whose agents were suspended through the agents API
    for _ in range(5):
        operator = make_operator(widget)
        agent_services.suspend_agent(widget=widget, agent=operator.agent)

        # when the agent is restored while the operator is revoked
        def restore(agent=operator.agent):
            return agent_services.restore_agent(widget=widget, agent=agent).status

        def revoke(operator=operator):
            return services.set_lifecycle(widget=widget, operator=operator, state="revoked").state

        restored, revoked = race([restore, revoke])
        # then whichever commits first, the revoked operator's agent ends banned
        assert revoked == "revoked", revoked
        assert restored == "active" or isinstance(restored, agent_services.AgentNotRestorable), restored
        assert Agent.objects.get(pk=operator.agent_id).status == "banned"
