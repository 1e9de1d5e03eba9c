"""/v1/macros (list, create, read, PATCH, DELETE) and POST /v1/chats/{id}/macros/{macro_id}/run
(product-decisions.md, "Team work", "Macros")."""

import itertools

import pytest
from rest_framework.test import APIClient

from apps.audit.models import AuditEntry
from apps.chats import services as chat_services
from apps.chats.models import Chat, ChatLabel, Message
from apps.chats.tests.factories import ChatFactory, ContactFactory
from apps.core.models import OutboxEvent
from apps.macros import services
from apps.macros.models import Macro
from tests.support.factories import AgentFactory
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

URL = "/api/v1/macros"
READ, WRITE, RUN = ["macros:read"], ["macros:write"], ["chats:write"]
_keys = itertools.count()


def key() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"k{next(_keys)}"}


def url(row_or_id) -> str:
    return f"{URL}/{getattr(row_or_id, 'pk', row_or_id)}"


def run_url(chat, macro) -> str:
    return f"/api/v1/chats/{getattr(chat, 'pk', chat)}/macros/{getattr(macro, 'pk', macro)}/run"


def macro(widget, name="Refund", actions=None, **kwargs) -> Macro:
    return services.create_macro(widget=widget, name=name, actions=actions or [{"type": "close"}], **kwargs)


@pytest.fixture
def chat(widget):
    return ChatFactory(contact=ContactFactory(widget=widget, name="Ann"))


# --- CRUD ----------------------------------------------------------------------------------------------


def test_list_serves_every_macro_of_the_widget_by_name(api, widget, other_widget):
    operator = AgentFactory(widget=widget)
    b = macro(widget, "b")
    a = macro(widget, "a", visibility="personal", agent=operator)
    macro(other_widget, "aa")
    data = api(scopes=READ).get(URL).json()["data"]
    assert [(r["id"], r["visibility"], r["agent_id"]) for r in data] == [
        (a.pk, "personal", operator.pk),
        (b.pk, "all", None),
    ]
    assert set(data[0]) == {"id", "name", "visibility", "agent_id", "actions", "created_at", "updated_at"}


def test_list_filters_by_visibility_and_agent(api, widget):
    operator = AgentFactory(widget=widget)
    mine = macro(widget, "mine", visibility="personal", agent=operator)
    macro(widget, "shared")
    client = api(scopes=READ)
    assert [r["id"] for r in client.get(URL, {"visibility": "personal"}).json()["data"]] == [mine.pk]
    assert [r["id"] for r in client.get(URL, {"agent_id": operator.pk}).json()["data"]] == [mine.pk]
    assert_problem(client.get(URL, {"visibility": "secret"}), 422, "validation_failed")


def test_create_stores_the_normalised_actions_and_audits(api, widget):
    chat_services.create_label(widget=widget, name="Refund")
    body = {"name": "Refund", "actions": [{"type": "add_labels", "labels": ["refund"]}, {"type": "close"}]}
    response = api(scopes=WRITE).post(URL, body, format="json", **key())
    assert response.status_code == 201, response.content
    data = response.json()
    assert data["actions"] == [{"type": "add_labels", "labels": ["Refund"]}, {"type": "close"}]
    assert (data["visibility"], data["agent_id"]) == ("all", None)
    assert AuditEntry.objects.filter(action="macro.created", target_id=str(data["id"])).exists()


def test_create_a_personal_macro_for_an_operator(api, widget):
    operator = AgentFactory(widget=widget)
    body = {"name": "Mine", "visibility": "personal", "agent_id": operator.pk, "actions": [{"type": "close"}]}
    data = api(scopes=WRITE).post(URL, body, format="json", **key()).json()
    assert (data["visibility"], data["agent_id"]) == ("personal", operator.pk)


@pytest.mark.parametrize(
    ("body", "member"),
    [
        ({"name": "x", "visibility": "personal", "actions": [{"type": "close"}]}, "agent_id"),
        ({"name": "", "actions": [{"type": "close"}]}, "name"),
        ({"name": "x", "actions": [{"type": "close"}], "extra": 1}, "extra"),
        ({"name": "x", "actions": [{"type": "close"}] * 11}, "actions"),
        ({"name": "x", "actions": [{"type": "send_message", "text": "{{nope}}"}]}, "actions.0.text"),
        ({"name": "x", "actions": [{"type": "assign_agent", "agent_id": 10**9}]}, "actions.0.agent_id"),
        ({"name": "x", "actions": [{"type": "send_webhook", "url": "https://a.example"}]}, "actions.0.type"),
    ],
)
def test_create_refuses_bad_input_with_422_and_stores_nothing(api, body, member):
    body_ = assert_problem(api(scopes=WRITE).post(URL, body, format="json", **key()), 422, "validation_failed")
    assert member in body_["errors"], body_
    assert not Macro.objects.exists()


def test_ids_of_another_widget_are_refused_like_missing_ones(api, widget, other_widget):
    foreign = AgentFactory(widget=other_widget)
    client = api(scopes=WRITE)
    for agent_id in (foreign.pk, 10**9):
        body = {"name": "x", "actions": [{"type": "assign_agent", "agent_id": agent_id}]}
        errors = assert_problem(client.post(URL, body, format="json", **key()), 422)["errors"]
        assert errors == {"actions.0.agent_id": ["Unknown id."]}
    body = {"name": "x", "visibility": "personal", "agent_id": foreign.pk, "actions": [{"type": "close"}]}
    assert assert_problem(client.post(URL, body, format="json", **key()), 422)["errors"] == {
        "agent_id": ["Unknown id."]
    }


def test_read_patch_delete(api, widget):
    row = macro(widget)
    client = api(scopes=READ + WRITE)
    assert client.get(url(row)).json()["name"] == "Refund"
    patched = client.patch(url(row), {"name": "Refunds"}, format="json", **key()).json()
    assert patched["name"] == "Refunds" and patched["actions"] == [{"type": "close"}]
    assert client.delete(url(row), **key()).status_code == 204
    assert not Macro.objects.exists()
    actions = set(AuditEntry.objects.filter(target_type="macro").values_list("action", flat=True))
    assert actions == {"macro.created", "macro.changed", "macro.deleted"}


def test_patch_to_shared_drops_the_operator(api, widget):
    row = macro(widget, visibility="personal", agent=AgentFactory(widget=widget))
    data = api(scopes=WRITE).patch(url(row), {"visibility": "all"}, format="json", **key()).json()
    assert (data["visibility"], data["agent_id"]) == ("all", None)


def test_another_widgets_macro_is_404_everywhere(api, widget, other_widget, chat):
    foreign = macro(other_widget)
    client = api(scopes=READ + WRITE + RUN)
    assert_problem(client.get(url(foreign)), 404, "not_found")
    assert_problem(client.patch(url(foreign), {"name": "x"}, format="json", **key()), 404, "not_found")
    assert_problem(client.delete(url(foreign), **key()), 404, "not_found")
    assert_problem(client.post(run_url(chat, foreign), format="json", **key()), 404, "not_found")
    assert_problem(client.post(run_url(ChatFactory(), macro(widget)), format="json", **key()), 404, "not_found")


def test_scopes(api, widget, chat):
    row = macro(widget)
    assert_problem(api(scopes=WRITE).get(URL), 403, "missing_scope")
    assert_problem(api(scopes=READ).post(URL, {}, format="json", **key()), 403, "missing_scope")
    assert_problem(api(scopes=READ + WRITE).post(run_url(chat, row), format="json", **key()), 403, "missing_scope")
    assert api(scopes=RUN).get(URL).status_code == 403
    assert_problem(APIClient().get(URL), 401)


# --- run ------------------------------------------------------------------------------------------------


def test_run_answers_chat_id_and_actions_run(api, widget, chat, captured_events):
    row = macro(widget, actions=[{"type": "send_message", "text": "Hi {{contact.name}}"}, {"type": "close"}])
    response = api(scopes=RUN).post(run_url(chat, row), format="json", **key())
    assert response.status_code == 200, response.content
    assert response.json() == {"chat_id": chat.pk, "actions_run": 2}
    assert Message.objects.get(chat=chat).body == "Hi Ann"
    chat.refresh_from_db()
    assert chat.status == Chat.Status.EXPIRED
    assert {"message.created", "chat.closed"} <= {t for t, _ in captured_events()}


def test_run_refuses_a_body(api, widget, chat):
    row = macro(widget)
    assert_problem(api(scopes=RUN).post(run_url(chat, row), {"x": 1}, format="json", **key()), 422)


def test_a_refusal_in_the_middle_is_422_and_changes_nothing(api, widget, chat):
    chat_services.create_label(widget=widget, name="vip")
    operator = AgentFactory(widget=widget)
    gone = AgentFactory(widget=widget)
    row = macro(
        widget,
        actions=[
            {"type": "send_message", "text": "Hello"},
            {"type": "add_labels", "labels": ["vip"]},
            {"type": "assign_agent", "agent_id": operator.pk},
            {"type": "assign_agent", "agent_id": gone.pk},
            {"type": "close"},
        ],
    )
    gone.delete()
    outbox = OutboxEvent.objects.count()
    body = assert_problem(api(scopes=RUN).post(run_url(chat, row), format="json", **key()), 422, "macro_action_refused")
    assert (body["action_index"], body["action_type"], body["refusal"]["code"]) == (3, "assign_agent", "not_found")
    assert body["refusal"]["detail"] in body["detail"]
    chat.refresh_from_db()
    assert not Message.objects.filter(chat=chat).exists() and not ChatLabel.objects.filter(chat=chat).exists()
    assert chat.agent_id is None and chat.status != Chat.Status.EXPIRED
    assert OutboxEvent.objects.count() == outbox


def test_a_refused_run_does_not_spend_its_idempotency_key(api, widget):
    chat = ChatFactory(contact=ContactFactory(widget=widget), status=Chat.Status.SPAM)
    row = macro(widget)
    client = api(scopes=RUN)
    headers = key()
    assert_problem(client.post(run_url(chat, row), format="json", **headers), 422, "macro_action_refused")
    Chat.objects.filter(pk=chat.pk).update(status=Chat.Status.ACTIVE)
    assert client.post(run_url(chat, row), format="json", **headers).status_code == 200


def test_the_problem_code_has_its_page(client):
    assert client.get("/api/problems/macro_action_refused").status_code == 200
