"""/api/v1/automation-rules: list, create, read, PATCH, DELETE and the runs (product-decisions.md
"Team work", automation rules): scopes, tenancy, validation, audit rows."""

import pytest

from apps.audit.models import AuditEntry
from apps.automation import runtime, services
from apps.automation.models import AutomationRule
from apps.chats.tests.factories import ChatFactory, ContactFactory
from tests.support.factories import AgentFactory
from tests.support.plugin import assert_problem

from .conftest import log_run

pytestmark = pytest.mark.django_db

URL = "/api/v1/automation-rules"
READ, WRITE = ["automation:read"], ["automation:write"]
MEMBERS = {"id", "name", "enabled", "event", "conditions", "actions", "created_at", "updated_at"}


def body(**overrides) -> dict:
    return {
        "name": "Refunds",
        "event": "message.created",
        "conditions": [{"field": "message.text", "op": "contains", "value": "refund"}],
        "actions": [{"type": "add_note", "text": "Refund asked"}],
        **overrides,
    }


def url(rule_or_id, tail="") -> str:
    return f"{URL}/{getattr(rule_or_id, 'pk', rule_or_id)}{tail}"


def test_create_read_list_patch_delete(api, idem, widget):
    client = api(scopes=READ + WRITE)
    created = client.post(URL, body(), format="json", **idem())
    assert created.status_code == 201, created.content
    rule = created.json()
    assert set(rule) == MEMBERS and rule["enabled"] is True
    assert rule["conditions"] == body()["conditions"] and rule["actions"] == body()["actions"]
    assert client.get(url(rule["id"])).json() == rule
    assert [r["id"] for r in client.get(URL).json()["data"]] == [rule["id"]]
    patched = client.patch(url(rule["id"]), {"enabled": False}, format="json", **idem())
    assert patched.status_code == 200 and patched.json()["enabled"] is False
    assert patched.json()["name"] == "Refunds"
    assert client.delete(url(rule["id"]), **idem()).status_code == 204
    assert not AutomationRule.objects.exists()


def test_create_change_delete_are_audited(api, idem, widget):
    client = api(scopes=WRITE)
    rule_id = client.post(URL, body(), format="json", **idem()).json()["id"]
    client.patch(url(rule_id), {"name": "Refund chats"}, format="json", **idem())
    client.delete(url(rule_id), **idem())
    rows = AuditEntry.objects.filter(widget=widget, target_type="automation_rule", target_id=str(rule_id))
    assert sorted(rows.values_list("action", flat=True)) == [
        "automation_rule.changed",
        "automation_rule.created",
        "automation_rule.deleted",
    ]


@pytest.mark.parametrize(
    ("method", "path", "scopes"),
    [
        ("get", "", WRITE),
        ("post", "", READ),
        ("get", "/{id}", WRITE),
        ("patch", "/{id}", READ),
        ("delete", "/{id}", READ),
        ("get", "/{id}/runs", WRITE),
    ],
)
def test_each_route_needs_its_scope(api, idem, widget, method, path, scopes):
    rule = AutomationRule.objects.create(widget=widget, name="r", event="chat.created", actions=[{"type": "close"}])
    response = getattr(api(scopes=scopes), method)(URL + path.format(id=rule.pk), body(), format="json", **idem())
    assert_problem(response, 403, "missing_scope")


def test_without_a_token_is_401(client):
    assert client.get(URL).status_code == 401


@pytest.mark.parametrize(("method", "tail"), [("get", ""), ("patch", ""), ("delete", ""), ("get", "/runs")])
def test_another_widgets_rule_is_404_like_a_missing_one(api, idem, other_widget, method, tail):
    foreign = AutomationRule.objects.create(
        widget=other_widget, name="theirs", event="chat.created", actions=[{"type": "close"}]
    )
    client = api(scopes=READ + WRITE)
    for rule_id in (foreign.pk, 10**9):
        response = getattr(client, method)(url(rule_id, tail), {"name": "x"}, format="json", **idem())
        assert_problem(response, 404)
    assert AutomationRule.objects.get(pk=foreign.pk).name == "theirs"


@pytest.mark.parametrize(
    ("overrides", "path"),
    [
        ({"event": "chat.transferred"}, "event"),
        ({"name": ""}, "name"),
        ({"conditions": [{"field": "message.text", "op": "matches", "value": "(["}]}, "conditions.0.value"),
        ({"conditions": [{"field": "mood", "op": "equals", "value": "x"}]}, "conditions.0.field"),
        ({"conditions": [{"field": "channel", "op": "like", "value": "x"}]}, "conditions.0.op"),
        ({"actions": []}, "actions"),
        ({"actions": [{"type": "explode"}]}, "actions.0.type"),
        ({"actions": [{"type": "assign_agent", "agent_id": 10**9}]}, "actions.0.agent_id"),
        ({"actions": [{"type": "send_webhook", "url": "http://insecure.example/"}]}, "actions.0.url"),
        ({"actions": [{"type": "send_webhook", "url": "https://not-subscribed.example/"}]}, "actions.0.url"),
    ],
)
def test_bad_input_is_422_naming_the_member_and_changes_nothing(api, idem, overrides, path):
    response = api(scopes=WRITE).post(URL, body(**overrides), format="json", **idem())
    problem = assert_problem(response, 422, "validation_failed")
    assert path in problem["errors"], problem
    assert not AutomationRule.objects.exists()


def test_patch_validates_like_create(api, idem, widget):
    client = api(scopes=WRITE)
    rule_id = client.post(URL, body(), format="json", **idem()).json()["id"]
    bad = {"conditions": [{"field": "message.text", "op": "matches", "value": "(a"}]}
    problem = assert_problem(client.patch(url(rule_id), bad, format="json", **idem()), 422, "validation_failed")
    assert list(problem["errors"]) == ["conditions.0.value"]
    assert AutomationRule.objects.get(pk=rule_id).conditions == body()["conditions"]


def test_another_widgets_agent_in_an_action_is_422_like_a_missing_one(api, idem, other_widget):
    foreign = AgentFactory(widget=other_widget)
    response = api(scopes=WRITE).post(
        URL, body(actions=[{"type": "assign_agent", "agent_id": foreign.pk}]), format="json", **idem()
    )
    assert assert_problem(response, 422)["errors"]["actions.0.agent_id"] == ["Unknown id."]


def make_rule(widget, **overrides) -> AutomationRule:
    return services.create_rule(
        widget=widget,
        **{"name": "r", "event": "chat.created", "conditions": [], "actions": [{"type": "close"}], **overrides},
    )


def test_runs_lists_the_last_runs_newest_first(api, widget):
    rule = make_rule(widget)
    chat = ChatFactory(contact=ContactFactory(widget=widget))
    for outcome in ("matched", "not_matched", "failed"):
        log_run(rule, outcome=outcome, detail="" if outcome == "not_matched" else outcome, chat_id=chat.pk)
    data = api(scopes=READ).get(url(rule, "/runs")).json()["data"]
    assert [(r["outcome"], r["detail"]) for r in data] == [
        ("failed", "failed"),
        ("not_matched", ""),
        ("matched", "matched"),
    ]
    assert set(data[0]) == {"at", "chat_id", "outcome", "detail"} and data[0]["chat_id"] == chat.pk


def test_runs_show_at_most_a_hundred(api, widget):
    rule = make_rule(widget)
    for i in range(120):
        log_run(rule, outcome="failed", detail=str(i))
    data = api(scopes=READ).get(url(rule, "/runs")).json()["data"]
    assert len(data) == 100 and data[0]["detail"] == "119" and data[-1]["detail"] == "20"


def test_a_rule_created_through_the_api_runs(api, idem, widget, fire):
    from .conftest import event_data

    client = api(scopes=READ + WRITE)
    rule_id = client.post(
        URL, body(event="chat.created", conditions=[], actions=[{"type": "close"}]), format="json", **idem()
    ).json()["id"]
    chat = ChatFactory(contact=ContactFactory(widget=widget))
    runtime.clear_cache()
    fire(widget, "chat.created", **event_data("chat.created", chat))
    assert [r["outcome"] for r in client.get(url(rule_id, "/runs")).json()["data"]] == ["matched"]


def test_another_widgets_rule_with_runs_is_404_and_its_runs_stay_out_of_ours(api, widget, other_widget):
    theirs, mine = make_rule(other_widget), make_rule(widget)
    log_run(theirs, outcome="failed", detail="their secret")
    log_run(mine, outcome="matched", detail="1 action(s) ran.")
    client = api(scopes=READ)
    assert_problem(client.get(url(theirs, "/runs")), 404)
    assert [r["detail"] for r in client.get(url(mine, "/runs")).json()["data"]] == ["1 action(s) ran."]
