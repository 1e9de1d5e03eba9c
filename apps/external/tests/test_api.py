"""The eight external-operator routes: success, 401, 403 without the scope, 404 for a foreign or
unknown id, 422 for bad input, 409 for the lifecycle's conflicts, and the list's query count."""

from __future__ import annotations

import itertools

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.agents.models import Agent, AgentEvent
from apps.external import services
from apps.external.models import ExternalOperator
from apps.webhooks.models import Delivery
from tests.support.plugin import assert_problem

from .factories import make_operator, visitor_message

pytestmark = pytest.mark.django_db

BASE = "/api/v1/external-operators"
READ, WRITE = ["agents:read"], ["agents:write"]
_keys = itertools.count()


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"x-{next(_keys)}"}


def post(client, path, body=None):
    return client.post(path, body if body is not None else {}, format="json", **idem())


# --- reads ---------------------------------------------------------------------------------------


def test_list_shows_the_widgets_operators_newest_first_without_secrets(api, widget, other_widget):
    first = make_operator(widget, name="First")
    second = make_operator(widget, name="Second")
    make_operator(other_widget, name="Foreign")
    response = api(scopes=READ).get(BASE)
    assert response.status_code == 200
    body = response.json()
    assert [row["public_id"] for row in body["data"]] == [second.public_id, first.public_id]
    row = body["data"][1]
    assert row == {
        "public_id": first.public_id,
        "name": "First",
        "url": first.url,
        "state": "active",
        "agent_id": first.agent_id,
        "draining_url": None,
        "draining_pending": 0,
        "resume_state": None,
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }
    assert "secret" not in response.content.decode()
    assert body["next_cursor"] is None


def test_list_runs_a_fixed_number_of_queries(api, widget):
    client = api(scopes=READ)
    make_operator(widget)
    client.get(BASE)  # the token's first use writes once
    with CaptureQueriesContext(connection) as one:
        assert client.get(BASE).status_code == 200
    for n in range(6):
        operator = make_operator(widget, name=f"Bot {n}", url=f"https://127.0.0.1:1/hook{n}")
        if n % 2:  # rotating ones show their drain
            message = visitor_message(widget)
            services.dispatch_visitor_message(chat=message.chat, message=message)
            services.update_external_operator(
                widget=widget, operator=operator, changes={"url": "https://127.0.0.1:2/x"}
            )
    with CaptureQueriesContext(connection) as many:
        response = client.get(BASE)
    assert len(response.json()["data"]) == 7
    assert len(many.captured_queries) == len(one.captured_queries)


def test_list_paginates(api, widget):
    for n in range(3):
        make_operator(widget, name=f"B{n}")
    client = api(scopes=READ)
    page = client.get(BASE, {"limit": 2}).json()
    assert len(page["data"]) == 2 and page["next_cursor"]
    rest = client.get(BASE, {"limit": 2, "cursor": page["next_cursor"]}).json()
    assert len(rest["data"]) == 1 and rest["next_cursor"] is None


def test_reads_need_a_token_and_the_read_scope(api, widget, client):
    operator = make_operator(widget)
    assert_problem(client.get(BASE), 401)
    assert_problem(api(scopes=WRITE).get(BASE), 403, "missing_scope")
    assert_problem(api(scopes=WRITE).get(f"{BASE}/{operator.public_id}"), 403, "missing_scope")


def test_retrieve_and_foreign_or_unknown_ids_are_the_same_404(api, widget, other_widget):
    mine = make_operator(widget)
    foreign = make_operator(other_widget)
    client = api(scopes=READ)
    assert client.get(f"{BASE}/{mine.public_id}").json()["public_id"] == mine.public_id
    a = assert_problem(client.get(f"{BASE}/{foreign.public_id}"), 404, "not_found")
    b = assert_problem(client.get(f"{BASE}/xop_000000000000000000000000"), 404, "not_found")
    assert {k: v for k, v in a.items() if k != "instance"} == {k: v for k, v in b.items() if k != "instance"}


# --- PATCH ------------------------------------------------------------------------------------------


def test_patch_renames_the_operator_and_its_agent(api, widget):
    operator = make_operator(widget)
    response = api(scopes=WRITE).patch(
        f"{BASE}/{operator.public_id}", {"name": "  Sales bot "}, format="json", **idem()
    )
    assert response.status_code == 200 and response.json()["name"] == "Sales bot"
    operator.refresh_from_db()
    assert operator.agent.name == "Sales bot"


def test_patch_stores_the_name_in_nfc(api, widget):
    operator = make_operator(widget)
    response = api(scopes=WRITE).patch(f"{BASE}/{operator.public_id}", {"name": "Cafe\u0301"}, format="json", **idem())
    assert response.status_code == 200 and response.json()["name"] == "Caf\u00e9"


def test_patch_replaces_the_url(api, widget):
    operator = make_operator(widget)
    response = api(scopes=WRITE).patch(
        f"{BASE}/{operator.public_id}", {"url": "https://127.0.0.1:9/new"}, format="json", **idem()
    )
    assert response.status_code == 200
    assert response.json()["url"] == "https://127.0.0.1:9/new" and response.json()["state"] == "active"


def test_patch_with_queued_calls_rotates_and_a_second_url_change_is_409(api, widget):
    operator = make_operator(widget)
    message = visitor_message(widget)
    services.dispatch_visitor_message(chat=message.chat, message=message)
    client = api(scopes=WRITE + READ)
    body = client.patch(
        f"{BASE}/{operator.public_id}", {"url": "https://127.0.0.1:9/new"}, format="json", **idem()
    ).json()
    assert body["state"] == "rotating" and body["draining_url"] == operator.url and body["draining_pending"] == 1
    assert body["resume_state"] == "active"
    again = client.patch(f"{BASE}/{operator.public_id}", {"url": "https://127.0.0.1:9/third"}, format="json", **idem())
    assert_problem(again, 409, "rotation_in_progress")


@pytest.mark.parametrize(
    "body,field",
    [
        ({"url": "http://127.0.0.1:9/plain"}, "url"),
        ({"url": "https://user:pw@127.0.0.1:9/x"}, "url"),
        ({"url": 5}, "url"),
        ({"name": "   "}, "name"),
        ({"name": "x" * 151}, "name"),
        ({"name": "Support\u202etob"}, "name"),
        ({"name": "Sales\u200bbot"}, "name"),
        ({"name": "Sales\nbot"}, "name"),
        ({"secret": "abcdefabcdefabcdef"}, "secret"),
        ({"state": "paused"}, "state"),
    ],
)
def test_patch_refuses_bad_input_and_changes_nothing(api, widget, body, field):
    operator = make_operator(widget)
    response = api(scopes=WRITE).patch(f"{BASE}/{operator.public_id}", body, format="json", **idem())
    problem = assert_problem(response, 422)
    assert field in problem["errors"]
    fresh = ExternalOperator.objects.get(pk=operator.pk)
    assert (fresh.name, fresh.url, fresh.state) == (operator.name, operator.url, operator.state)


def test_patch_refuses_a_private_address(api, widget, settings):
    operator = make_operator(widget)
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    response = api(scopes=WRITE).patch(
        f"{BASE}/{operator.public_id}", {"url": "https://10.0.0.1/x"}, format="json", **idem()
    )
    assert "url" in assert_problem(response, 422)["errors"]


def test_patch_needs_the_write_scope_an_idempotency_key_and_json(api, widget):
    operator = make_operator(widget)
    path = f"{BASE}/{operator.public_id}"
    assert_problem(api(scopes=READ).patch(path, {"name": "x"}, format="json", **idem()), 403, "missing_scope")
    assert_problem(api(scopes=WRITE).patch(path, {"name": "x"}, format="json"), 400, "idempotency_key_missing")
    assert_problem(
        api(scopes=WRITE).patch(path, "name=x", content_type="application/x-www-form-urlencoded", **idem()), 415
    )
    assert_problem(api(scopes=WRITE).patch(path, "{", content_type="application/json", **idem()), 400, "invalid_json")


def test_patch_of_a_revoked_or_foreign_operator(api, widget, other_widget):
    revoked = make_operator(widget)
    services.set_lifecycle(widget=widget, operator=revoked, state="revoked")
    foreign = make_operator(other_widget)
    client = api(scopes=WRITE)
    assert_problem(
        client.patch(f"{BASE}/{revoked.public_id}", {"name": "x"}, format="json", **idem()), 409, "operator_revoked"
    )
    assert_problem(client.patch(f"{BASE}/{foreign.public_id}", {"name": "x"}, format="json", **idem()), 404)


# --- lifecycle --------------------------------------------------------------------------------------


def test_lifecycle_moves_and_the_agent_follows(api, widget):
    operator = make_operator(widget)
    client = api(scopes=WRITE)
    path = f"{BASE}/{operator.public_id}/lifecycle"
    for state, agent_status in [("paused", "relaxation"), ("testing", "relaxation"), ("active", "active")]:
        response = post(client, path, {"state": state})
        assert response.status_code == 200 and response.json()["state"] == state
        operator.agent.refresh_from_db()
        assert operator.agent.status == agent_status


def test_revoked_is_final(api, widget):
    operator = make_operator(widget)
    client = api(scopes=WRITE)
    path = f"{BASE}/{operator.public_id}/lifecycle"
    assert post(client, path, {"state": "revoked"}).json()["state"] == "revoked"
    assert post(client, path, {"state": "revoked"}).status_code == 200  # the same state: nothing changes
    for state in ("active", "paused", "testing"):
        assert_problem(post(client, path, {"state": state}), 409, "operator_revoked")
    assert ExternalOperator.objects.get(pk=operator.pk).state == "revoked"


@pytest.mark.parametrize(
    "body", [{"state": "rotating"}, {"state": "gone"}, {}, {"state": "active", "x": 1}, {"state": 1}]
)
def test_lifecycle_refuses_bad_input(api, widget, body):
    operator = make_operator(widget)
    response = post(api(scopes=WRITE), f"{BASE}/{operator.public_id}/lifecycle", body)
    assert_problem(response, 422)
    assert ExternalOperator.objects.get(pk=operator.pk).state == "active"


def test_lifecycle_scopes_and_foreign_ids(api, widget, other_widget):
    operator = make_operator(widget)
    foreign = make_operator(other_widget)
    assert_problem(post(api(scopes=READ), f"{BASE}/{operator.public_id}/lifecycle", {"state": "paused"}), 403)
    assert_problem(post(api(scopes=WRITE), f"{BASE}/{foreign.public_id}/lifecycle", {"state": "revoked"}), 404)
    assert ExternalOperator.objects.get(pk=foreign.pk).state == "active"


def test_lifecycle_during_a_rotation_keeps_rotating_and_sets_the_state_to_return_to(api, widget):
    operator = make_operator(widget)
    message = visitor_message(widget)
    services.dispatch_visitor_message(chat=message.chat, message=message)
    services.update_external_operator(widget=widget, operator=operator, changes={"url": "https://127.0.0.1:9/new"})
    body = post(api(scopes=WRITE), f"{BASE}/{operator.public_id}/lifecycle", {"state": "paused"}).json()
    assert body["state"] == "rotating" and body["resume_state"] == "paused"
    assert set(Delivery.objects.filter(endpoint__isnull=False).values_list("next_attempt_at", flat=True)) == {None}


# --- force-drain ------------------------------------------------------------------------------------


def test_force_drain_abandons_and_answers_the_count(api, widget):
    operator = make_operator(widget)
    message = visitor_message(widget)
    services.dispatch_visitor_message(chat=message.chat, message=message)
    services.update_external_operator(widget=widget, operator=operator, changes={"url": "https://127.0.0.1:9/new"})
    response = post(api(scopes=WRITE), f"{BASE}/{operator.public_id}/force-drain")
    assert response.status_code == 200
    assert response.json()["abandoned"] == 1 and response.json()["state"] == "active"
    assert Delivery.objects.get(endpoint__isnull=False).status == "skipped"


def test_force_drain_when_not_rotating_or_revoked_or_foreign(api, widget, other_widget):
    operator = make_operator(widget)
    client = api(scopes=WRITE)
    assert_problem(post(client, f"{BASE}/{operator.public_id}/force-drain"), 409, "not_rotating")
    assert_problem(post(client, f"{BASE}/{operator.public_id}/force-drain", {"now": True}), 422)
    services.set_lifecycle(widget=widget, operator=operator, state="revoked")
    assert_problem(post(client, f"{BASE}/{operator.public_id}/force-drain"), 409, "operator_revoked")
    foreign = make_operator(other_widget)
    assert_problem(post(client, f"{BASE}/{foreign.public_id}/force-drain"), 404)
    assert_problem(post(api(scopes=READ), f"{BASE}/{operator.public_id}/force-drain"), 403)


# --- probes -----------------------------------------------------------------------------------------


def test_a_probe_is_enqueued_and_pollable(api, widget, triggers):
    operator = make_operator(widget, state="testing")
    client = api(scopes=WRITE + READ)
    response = post(client, f"{BASE}/{operator.public_id}/tests")
    assert response.status_code == 202
    probe = response.json()
    assert probe["status"] == "pending" and probe["public_id"].startswith("xtest_")
    assert probe["operator_id"] == operator.public_id and probe["attempts"] == [] and probe["url"] == operator.url
    polled = client.get(f"{BASE}/{operator.public_id}/tests/{probe['public_id']}")
    assert polled.status_code == 200 and polled.json()["delivery_id"] == probe["delivery_id"]
    # one pending probe at a time
    assert_problem(post(client, f"{BASE}/{operator.public_id}/tests"), 409, "test_pending")


def test_a_probe_result_shows_its_attempts(api, widget, receiver, triggers):
    from apps.webhooks import services as webhooks

    operator = make_operator(widget, receiver.url(), state="testing")
    client = api(scopes=WRITE + READ)
    probe = post(client, f"{BASE}/{operator.public_id}/tests").json()
    webhooks.deliver_due(concurrency=1)
    polled = client.get(f"{BASE}/{operator.public_id}/tests/{probe['public_id']}").json()
    assert polled["status"] == "delivered"
    [attempt] = polled["attempts"]
    assert attempt["number"] == 1 and attempt["status_code"] == 200 and attempt["error"] is None


def test_probe_conflicts_and_bad_input(api, widget):
    client = api(scopes=WRITE)
    paused = make_operator(widget, state="paused")
    assert_problem(post(client, f"{BASE}/{paused.public_id}/tests"), 409, "operator_paused")
    revoked = make_operator(widget)
    services.set_lifecycle(widget=widget, operator=revoked, state="revoked")
    assert_problem(post(client, f"{BASE}/{revoked.public_id}/tests"), 409, "operator_revoked")
    active = make_operator(widget)
    assert_problem(post(client, f"{BASE}/{active.public_id}/tests", {"count": 3}), 422)
    assert_problem(client.post(f"{BASE}/{active.public_id}/tests", {}, format="json"), 400, "idempotency_key_missing")
    assert_problem(post(api(scopes=READ), f"{BASE}/{active.public_id}/tests"), 403)


def test_poll_of_an_unknown_or_another_operators_probe_is_404(api, widget, other_widget, triggers):
    a = make_operator(widget, name="A")
    b = make_operator(widget, name="B")
    foreign = make_operator(other_widget)
    probe = services.send_probe(widget=widget, operator=a)
    foreign_probe = services.send_probe(widget=other_widget, operator=foreign)
    client = api(scopes=READ)
    assert_problem(client.get(f"{BASE}/{b.public_id}/tests/{probe.public_id}"), 404)
    assert_problem(client.get(f"{BASE}/{a.public_id}/tests/xtest_000000000000000000000000"), 404)
    assert_problem(client.get(f"{BASE}/{foreign.public_id}/tests/{foreign_probe.public_id}"), 404)
    assert_problem(api(scopes=WRITE).get(f"{BASE}/{a.public_id}/tests/{probe.public_id}"), 403)


# --- delete -----------------------------------------------------------------------------------------


def test_only_a_revoked_operator_is_deleted(api, widget):
    operator = make_operator(widget)
    client = api(scopes=WRITE + READ)
    assert_problem(client.delete(f"{BASE}/{operator.public_id}"), 409, "operator_not_revoked")
    services.set_lifecycle(widget=widget, operator=operator, state="revoked")
    assert client.delete(f"{BASE}/{operator.public_id}").status_code == 204
    assert_problem(client.get(f"{BASE}/{operator.public_id}"), 404)
    assert_problem(client.delete(f"{BASE}/{operator.public_id}"), 404)
    assert client.get(BASE).json()["data"] == []
    assert ExternalOperator.objects.get(pk=operator.pk).deleted_at is not None  # soft


def test_delete_scope_and_foreign(api, widget, other_widget):
    foreign = make_operator(other_widget)
    services.set_lifecycle(widget=other_widget, operator=foreign, state="revoked")
    assert_problem(api(scopes=WRITE).delete(f"{BASE}/{foreign.public_id}"), 404)
    operator = make_operator(widget)
    assert_problem(api(scopes=READ).delete(f"{BASE}/{operator.public_id}"), 403)


# --- the operator's agent (the agents routes) --------------------------------------------------------

AGENTS = "/api/v1/agents"


@pytest.mark.parametrize("deleted", [False, True])
def test_the_agent_of_a_revoked_operator_cannot_be_restored(api, widget, deleted):
    # given a revoked operator (its agent banned by the revocation), perhaps deleted since
    operator = make_operator(widget)
    services.set_lifecycle(widget=widget, operator=operator, state="revoked")
    if deleted:
        services.delete_external_operator(widget=widget, operator=operator)
    events_before = AgentEvent.objects.filter(agent_id=operator.agent_id).count()
    # when its agent is restored through the agents API
    response = post(api(scopes=["agents:write", "agents:read"]), f"{AGENTS}/{operator.agent_id}/restore")
    # then it is refused and nothing changes: the agent stays banned, the operator answers nobody
    assert_problem(response, 409, "agent_not_restorable")
    assert Agent.objects.get(pk=operator.agent_id).status == "banned"
    assert AgentEvent.objects.filter(agent_id=operator.agent_id).count() == events_before
    message = visitor_message(widget)
    assert services.dispatch_visitor_message(chat=message.chat, message=message) is False


@pytest.mark.parametrize(
    ("state", "status"), [("active", "active"), ("paused", "relaxation"), ("testing", "relaxation")]
)
def test_a_suspended_operators_agent_returns_to_the_status_its_lifecycle_gives(api, widget, state, status):
    # given an operator whose agent was suspended through the agents API
    operator = make_operator(widget, state=state)
    client = api(scopes=["agents:write", "agents:read"])
    assert post(client, f"{AGENTS}/{operator.agent_id}/suspend").json()["status"] == "banned"
    # when the agent is restored
    response = post(client, f"{AGENTS}/{operator.agent_id}/restore")
    # then it shows what the operator's lifecycle says, as a lifecycle move would have set it
    assert response.status_code == 200 and response.json()["status"] == status
    assert Agent.objects.get(pk=operator.agent_id).status == status
    assert client.get(f"{AGENTS}/{operator.agent_id}").json()["status"] == status


@pytest.mark.parametrize(
    ("route", "body"),
    [
        ("patch", {"name": "Renamed"}),
        ("lifecycle", {"state": "paused"}),
        ("lifecycle", {"state": "testing"}),
    ],
)
def test_a_suspension_through_the_agents_api_outlasts_the_operators_own_writes(api, widget, route, body):
    # given an active operator whose agent was suspended through the agents API
    operator = make_operator(widget)
    client = api(scopes=["agents:write", "agents:read"])
    assert post(client, f"{AGENTS}/{operator.agent_id}/suspend").json()["status"] == "banned"
    # when the operator is renamed or moved through its own routes
    path = f"{BASE}/{operator.public_id}"
    if route == "patch":
        response = client.patch(path, body, format="json", **idem())
    else:
        response = post(client, f"{path}/lifecycle", body)
    assert response.status_code == 200
    # then its agent stays suspended (only the agents API's restore lifts it), with the new name
    agent = Agent.objects.get(pk=operator.agent_id)
    assert agent.status == "banned" and agent.name == ExternalOperator.objects.get(pk=operator.pk).name
    message = visitor_message(widget)
    assert services.dispatch_visitor_message(chat=message.chat, message=message) is False
    if route == "lifecycle":
        # and a move back to active does not lift it either
        assert post(client, f"{path}/lifecycle", {"state": "active"}).status_code == 200
        assert Agent.objects.get(pk=operator.agent_id).status == "banned"
