"""The support gate: every support call passes it, in the spec's order, at request time."""

from __future__ import annotations

import itertools

import pytest

from apps.agents.models import Agent
from apps.support.models import SupportAction, SupportConfig
from tests.support.plugin import assert_problem

ORDER = [
    ("disabled", 503, "support_api_disabled"),
    ("token", 403, "token_not_allowed"),
    ("ip", 403, "ip_not_allowed"),
    ("operator", 503, "support_operator_not_configured"),
]


def _break(support, what: str) -> None:
    config = SupportConfig.objects.get(widget=support.widget)
    if what == "disabled":
        config.enabled = False
    elif what == "token":
        config.allowed_tokens = ["cwt_AAAAAAAA"]
    elif what == "ip":
        config.ip_allowlist = ["198.51.100.0/24"]
    elif what == "operator":
        Agent.objects.filter(pk=support.operator.pk).update(status=Agent.Status.BANNED)
    config.save()


SUBSETS = [c for n in range(1, 5) for c in itertools.combinations([o[0] for o in ORDER], n)]


@pytest.mark.parametrize("failing", SUBSETS, ids=["+".join(s) for s in SUBSETS])
def test_the_first_failing_condition_in_spec_order_answers(support, failing):
    for what in failing:
        _break(support, what)
    first = next(o for o in ORDER if o[0] in failing)
    chat = support.chat()
    reads = [
        support.client.get("/api/v1/support/chats", {"updated_since": "2020-01-01"}),
        support.client.get(f"/api/v1/support/chats/{chat.pk}"),
        support.client.get("/api/v1/support/actions/1"),
    ]
    writes = [
        support.post(f"/api/v1/support/chats/{chat.pk}/claim", {}),
        support.reply(chat, "hello"),
    ]
    for response in reads + writes:
        body = assert_problem(response, first[1], first[2])
        assert body["reason"] == first[2]
    # Nothing was sent or claimed, and every refused call left an audit row naming its reason.
    assert chat.messages.count() == 1
    rows = SupportAction.objects.filter(widget=support.widget)
    assert rows.count() == len(reads) + len(writes)
    assert set(rows.values_list("reason", flat=True)) == {first[2]}
    assert set(rows.values_list("outcome", flat=True)) == {"refused"}


def test_no_configuration_is_disabled(support):
    SupportConfig.objects.filter(widget=support.widget).delete()
    assert_problem(support.client.get("/api/v1/support/chats/1"), 503, "support_api_disabled")


def test_an_allowlist_without_a_valid_entry_denies_everyone(support):
    SupportConfig.objects.filter(widget=support.widget).update(ip_allowlist=["not-an-address", "300.1.1.1/8", ""])
    chat = support.chat()
    assert_problem(support.client.get(f"/api/v1/support/chats/{chat.pk}"), 403, "ip_not_allowed")


def test_the_allowlist_reads_remote_addr_not_a_forwarded_header(support):
    SupportConfig.objects.filter(widget=support.widget).update(ip_allowlist=["203.0.113.5/32"])
    chat = support.chat()
    response = support.client.get(f"/api/v1/support/chats/{chat.pk}", HTTP_X_FORWARDED_FOR="203.0.113.5")
    assert_problem(response, 403, "ip_not_allowed")
    ok = support.client.get(f"/api/v1/support/chats/{chat.pk}", REMOTE_ADDR="203.0.113.5")
    assert ok.status_code == 200


def test_an_ipv6_caller_matches_an_ipv6_network(support):
    chat = support.chat()
    assert support.client.get(f"/api/v1/support/chats/{chat.pk}", REMOTE_ADDR="::1").status_code == 200
    assert_problem(support.client.get(f"/api/v1/support/chats/{chat.pk}", REMOTE_ADDR="::2"), 403, "ip_not_allowed")


@pytest.mark.parametrize("change", ["removed", "ai", "banned", "foreign"])
def test_an_operator_changed_since_configuration_fails_at_request_time(support, other_widget, change):
    chat = support.chat()
    if change == "removed":
        support.operator.delete()
    elif change == "ai":
        Agent.objects.filter(pk=support.operator.pk).update(type=Agent.Type.AI)
    elif change == "banned":
        Agent.objects.filter(pk=support.operator.pk).update(status=Agent.Status.BANNED)
    else:
        Agent.objects.filter(pk=support.operator.pk).update(widget=other_widget)
    assert_problem(support.client.get(f"/api/v1/support/chats/{chat.pk}"), 503, "support_operator_not_configured")


def test_a_token_without_the_scope_is_refused_before_the_gate(support):
    client, _ = support.new_client(scopes=["support:read"])
    chat = support.chat()
    response = support.write(client, f"/api/v1/support/chats/{chat.pk}/claim", {})
    assert_problem(response, 403, "missing_scope")


def test_a_passing_gate_serves(support):
    chat = support.chat()
    response = support.client.get(f"/api/v1/support/chats/{chat.pk}")
    assert response.status_code == 200, response.content
    assert response.json()["id"] == chat.pk
