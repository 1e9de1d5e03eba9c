"""Assistants and AI operators."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.agents.models import Agent
from apps.ai.models import Assistant
from apps.ai.tests.conftest import idem
from apps.ai.tests.factories import AiOperatorFactory, AssistantFactory
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

FULL = {
    "name": "Sales",
    "enabled": False,
    "is_default": True,
    "persona": "Warm",
    "system_prompt": "Sell politely.",
    "temperature": 0.3,
    "rag_enabled": True,
    "escalation_triggers": ["refund", "Manager"],
    "greeting": "Hi!",
    "quick_phrases": ["Prices", "Delivery"],
    "greeting_i18n": {"ru": "Привет!", "en": "Hi!"},
    "quick_phrases_i18n": {"ru": ["Цены"]},
    "provider": "anthropic",
    "model": "claude-x",
}


def test_create_assistant_with_every_field(client, widget):
    r = client.post("/api/v1/ai/assistants", FULL, format="json", **idem())
    assert r.status_code == 201, r.content
    body = r.json()
    for name, value in FULL.items():
        assert body[name] == value, name
    assert Assistant.objects.get(pk=body["id"]).widget == widget


def test_is_default_is_exclusive(client, widget):
    first = AssistantFactory(widget=widget, is_default=True)
    r = client.post("/api/v1/ai/assistants", {"name": "B", "is_default": True}, format="json", **idem())
    assert r.json()["is_default"] is True
    first.refresh_from_db()
    assert first.is_default is False
    client.patch(f"/api/v1/ai/assistants/{first.pk}", {"is_default": True}, format="json", **idem())
    assert list(Assistant.objects.filter(widget=widget, is_default=True)) == [first]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"name": ""},
        {"name": None},
        {"name": "A", "temperature": 3},
        {"name": "A", "temperature": "0.5"},
        {"name": "A", "enabled": "yes"},
        {"name": "A", "provider": "litellm"},
        {"name": "A", "escalation_triggers": "refund"},
        {"name": "A", "escalation_triggers": [" "]},
        {"name": "A", "greeting_i18n": {"fr": "Salut"}},
        {"name": "A", "quick_phrases_i18n": {"ru": "Цены"}},
        {"name": "A", "id": 5},
        {"name": "A\u200b"},
    ],
)
def test_create_refuses_bad_input(client, widget, body):
    assert_problem(client.post("/api/v1/ai/assistants", body, format="json", **idem()), 422)
    assert not Assistant.objects.exists()


def test_name_cannot_be_cleared_and_patch_merges(client, widget):
    a = AssistantFactory(widget=widget, name="Keep", persona="P")
    assert_problem(client.patch(f"/api/v1/ai/assistants/{a.pk}", {"name": ""}, format="json", **idem()), 422)
    assert_problem(client.patch(f"/api/v1/ai/assistants/{a.pk}", {"name": None}, format="json", **idem()), 422)
    body = client.patch(f"/api/v1/ai/assistants/{a.pk}", {"greeting": "Yo"}, format="json", **idem()).json()
    assert body["name"] == "Keep" and body["persona"] == "P" and body["greeting"] == "Yo"


def test_list_is_paged_newest_first_without_n_plus_one(client, widget, other_widget):
    for _ in range(5):
        AssistantFactory(widget=widget)
    AssistantFactory(widget=other_widget)
    with CaptureQueriesContext(connection) as ctx:
        page = client.get("/api/v1/ai/assistants?limit=3").json()
    assert len(page["data"]) == 3 and page["next_cursor"]
    queries = len(ctx.captured_queries)
    rest = client.get(f"/api/v1/ai/assistants?limit=3&cursor={page['next_cursor']}").json()
    assert len(rest["data"]) == 2 and rest["next_cursor"] is None
    for _ in range(10):
        AssistantFactory(widget=widget)
    with CaptureQueriesContext(connection) as ctx:
        client.get("/api/v1/ai/assistants?limit=13")
    assert len(ctx.captured_queries) <= queries


def test_foreign_assistant_is_404(client, other_widget):
    foreign = AssistantFactory(widget=other_widget)
    assert_problem(client.get(f"/api/v1/ai/assistants/{foreign.pk}"), 404)
    assert_problem(client.patch(f"/api/v1/ai/assistants/{foreign.pk}", {"name": "x"}, format="json", **idem()), 404)
    assert_problem(client.delete(f"/api/v1/ai/assistants/{foreign.pk}"), 404)
    assert_problem(client.get("/api/v1/ai/assistants/999999"), 404)


def test_delete_refused_naming_the_operators_that_run_it(client, widget):
    a = AssistantFactory(widget=widget)
    op = AiOperatorFactory(assistant=a, name="Ann")
    body = assert_problem(client.delete(f"/api/v1/ai/assistants/{a.pk}"), 409, "assistant_in_use")
    assert body["operators"] == [{"id": op.pk, "name": "Ann"}]
    client.delete(f"/api/v1/ai/operators/{op.pk}")
    assert client.delete(f"/api/v1/ai/assistants/{a.pk}").status_code == 204
    assert not Assistant.objects.filter(pk=a.pk).exists()


def test_assistant_scopes_and_auth(api):
    from rest_framework.test import APIClient

    assert_problem(APIClient().get("/api/v1/ai/assistants"), 401)
    assert_problem(api(["ai:write"]).get("/api/v1/ai/assistants"), 403)
    assert_problem(api(["ai:read"]).post("/api/v1/ai/assistants", {"name": "a"}, format="json", **idem()), 403)


def test_assistant_create_idempotency_and_media_type(client):
    key = idem()
    assert client.post("/api/v1/ai/assistants", {"name": "a"}, format="json", **key).status_code == 201
    assert_problem(client.post("/api/v1/ai/assistants", {"name": "a"}, format="json", **key), 409)
    assert_problem(client.post("/api/v1/ai/assistants", {"name": "a"}, format="json"), 400)
    assert_problem(client.post("/api/v1/ai/assistants", "name=a", content_type="text/plain", **idem()), 415)
    assert Assistant.objects.count() == 1


# --- operators ---------------------------------------------------------------------------------------------


def test_create_operator_lists_it_among_agents_as_ai(client, widget):
    a = AssistantFactory(widget=widget, name="Brain")
    r = client.post("/api/v1/ai/operators", {"assistant_id": a.pk}, format="json", **idem())
    assert r.status_code == 201, r.content
    body = r.json()
    assert body["assistant_id"] == a.pk and body["name"] == "Brain" and body["status"] == "active"
    agents = client.get("/api/v1/agents?type=ai").json()["data"]
    assert [x["id"] for x in agents] == [body["id"]]
    assert client.get("/api/v1/ai/operators").json()["data"][0]["id"] == body["id"]


def test_operator_rename_rebind_header_status_and_reversible_retire(client, widget):
    a, b = AssistantFactory(widget=widget), AssistantFactory(widget=widget)
    op = AiOperatorFactory(assistant=a)
    body = client.patch(
        f"/api/v1/ai/operators/{op.pk}",
        {"name": "Zoe", "assistant_id": b.pk, "show_in_header": False, "status": "paused"},
        format="json",
        **idem(),
    ).json()
    assert body["name"] == "Zoe" and body["assistant_id"] == b.pk
    assert body["show_in_header"] is False and body["status"] == "paused"
    assert client.delete(f"/api/v1/ai/operators/{op.pk}").status_code == 204
    op.refresh_from_db()
    assert op.status == Agent.Status.BANNED
    assert client.get("/api/v1/ai/operators").json()["data"][0]["status"] == "retired"
    body = client.patch(f"/api/v1/ai/operators/{op.pk}", {"status": "active"}, format="json", **idem()).json()
    assert body["status"] == "active"


def test_operator_refuses_foreign_assistant_and_bad_input(client, widget, other_widget):
    foreign = AssistantFactory(widget=other_widget)
    for body in ({"assistant_id": foreign.pk}, {}, {"assistant_id": "1"}, {"assistant_id": 1, "status": "dead"}):
        assert_problem(client.post("/api/v1/ai/operators", body, format="json", **idem()), 422)
    assert not Agent.objects.filter(type=Agent.Type.AI).exists()


def test_operator_foreign_and_human_ids_are_404(client, widget, other_widget):
    foreign = AiOperatorFactory(assistant=AssistantFactory(widget=other_widget))
    human = Agent.objects.create(widget=widget, name="H", type=Agent.Type.HUMAN)
    for target in (foreign, human):
        assert_problem(client.patch(f"/api/v1/ai/operators/{target.pk}", {"name": "x"}, format="json", **idem()), 404)
        assert_problem(client.delete(f"/api/v1/ai/operators/{target.pk}"), 404)


def test_reviving_an_operator_whose_assistant_is_gone_is_409(client, widget):
    a = AssistantFactory(widget=widget)
    op = AiOperatorFactory(assistant=a, status=Agent.Status.BANNED)
    a.delete()
    assert_problem(client.patch(f"/api/v1/ai/operators/{op.pk}", {"status": "active"}, format="json", **idem()), 409)


def test_operator_scopes(api):
    assert_problem(api(["ai:write"]).get("/api/v1/ai/operators"), 403)
    assert_problem(api(["ai:read"]).post("/api/v1/ai/operators", {}, format="json", **idem()), 403)
