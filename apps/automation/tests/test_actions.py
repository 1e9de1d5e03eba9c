"""The action engine (apps.automation.actions): each action type's success and refusal, all or
nothing, and the tenancy of every id an action names."""

import pytest

from apps.agents.models import Agent, Department
from apps.automation.actions import ACTION_TYPES, MacroActionRefused, run_actions, validate_actions
from apps.chats import services as chat_services
from apps.chats.models import Chat, ChatLabel, ChatTransfer, Message
from apps.chats.tests.factories import ChatFactory, ContactFactory
from apps.core.errors import ValidationFailed
from apps.core.models import OutboxEvent
from tests.support.factories import AgentFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def chat(widget):
    return ChatFactory(contact=ContactFactory(widget=widget, name="Ann"))


@pytest.fixture
def operator(widget):
    return AgentFactory(widget=widget, name="Olga")


def label(widget, name):
    return chat_services.create_label(widget=widget, name=name)


def errors_of(widget, actions, allow_webhook=False) -> dict:
    with pytest.raises(ValidationFailed) as caught:
        validate_actions(widget=widget, actions=actions, allow_webhook=allow_webhook)
    return caught.value.errors


def run(widget, chat, actions, actor=None):
    stored = validate_actions(widget=widget, actions=actions, allow_webhook=False)
    return run_actions(widget=widget, chat=chat, actions=stored, actor=actor, by="macro")


# --- validation ----------------------------------------------------------------------------------------


def test_the_action_types_are_the_decided_ones():
    assert ACTION_TYPES == (
        "send_message",
        "add_note",
        "add_labels",
        "remove_labels",
        "assign_agent",
        "assign_department",
        "close",
    )


def test_validation_normalises_label_names_to_the_widgets_spelling(widget):
    label(widget, "Refund")
    stored = validate_actions(
        widget=widget,
        actions=[{"type": "add_labels", "labels": ["refund", "REFUND"]}, {"type": "close"}],
        allow_webhook=False,
    )
    assert stored == [{"type": "add_labels", "labels": ["Refund"]}, {"type": "close"}]


@pytest.mark.parametrize(
    ("actions", "key"),
    [
        ("close", "actions"),
        ([], "actions"),
        ([{"type": "close"}] * 11, "actions"),
        (["close"], "actions.0"),
        ([{"type": "explode"}], "actions.0.type"),
        ([{"type": "send_webhook", "url": "https://example.com"}], "actions.0.type"),
        ([{"type": "close", "reason": "x"}], "actions.0.reason"),
        ([{"type": "send_message"}], "actions.0.text"),
        ([{"type": "send_message", "text": "  "}], "actions.0.text"),
        ([{"type": "send_message", "text": "x" * 4001}], "actions.0.text"),
        ([{"type": "send_message", "text": "Hi {{contact.surname}}"}], "actions.0.text"),
        ([{"type": "add_note", "text": 5}], "actions.0.text"),
        ([{"type": "add_labels", "labels": []}], "actions.0.labels"),
        ([{"type": "add_labels", "labels": ["nope"]}], "actions.0.labels.0"),
        ([{"type": "assign_agent", "agent_id": "1"}], "actions.0.agent_id"),
        ([{"type": "assign_agent", "agent_id": 10**9}], "actions.0.agent_id"),
        ([{"type": "assign_department", "department_id": True}], "actions.0.department_id"),
    ],
)
def test_a_bad_list_is_422_at_the_member(widget, actions, key):
    assert key in errors_of(widget, actions)


def test_ids_and_labels_of_another_widget_are_refused_like_missing_ones(widget, other_widget):
    foreign_agent = AgentFactory(widget=other_widget)
    foreign_department = Department.objects.create(widget=other_widget, name="Sales")
    label(other_widget, "vip")
    errors = errors_of(
        widget,
        [
            {"type": "assign_agent", "agent_id": foreign_agent.pk},
            {"type": "assign_department", "department_id": foreign_department.pk},
            {"type": "remove_labels", "labels": ["vip"]},
        ],
    )
    assert (
        errors["actions.0.agent_id"]
        == errors_of(widget, [{"type": "assign_agent", "agent_id": 10**9}])["actions.0.agent_id"]
        == ["Unknown id."]
    )
    assert errors["actions.1.department_id"] == ["Unknown id."]
    assert "actions.2.labels.0" in errors


def test_a_banned_agent_is_refused(widget):
    banned = AgentFactory(widget=widget, status=Agent.Status.BANNED)
    assert errors_of(widget, [{"type": "assign_agent", "agent_id": banned.pk}]) == {
        "actions.0.agent_id": ["The agent is banned."]
    }


def test_send_webhook_is_accepted_only_where_allowed(widget):
    action = {"type": "send_webhook", "url": "https://hooks.example.com/vip"}
    assert validate_actions(widget=widget, actions=[action], allow_webhook=True) == [action]
    assert "actions.0.url" in errors_of(widget, [{"type": "send_webhook", "url": "http://x"}], allow_webhook=True)


# --- each action runs through its service -------------------------------------------------------------------


def test_send_message_fills_canned_variables_and_is_the_operators(widget, chat, operator, captured_events):
    assert (
        run(widget, chat, [{"type": "send_message", "text": "Hi {{contact.name}}, {{agent.name}} here"}], operator) == 1
    )
    message = Message.objects.get(chat=chat)
    assert (message.body, message.agent_id, message.visibility) == ("Hi Ann, Olga here", operator.pk, "public")
    assert [t for t, _ in captured_events() if t == "message.created"] == ["message.created"]


def test_send_message_without_an_operator_is_an_operator_message_with_no_agent(widget, chat):
    run(widget, chat, [{"type": "send_message", "text": "We are on it."}])
    message = Message.objects.get(chat=chat)
    assert (message.author_kind, message.agent_id) == (Message.Author.AGENT, None)
    chat.refresh_from_db()
    assert chat.agent_id is None and chat.first_agent_reply_at is None  # not a person's answer


def test_add_note_is_a_private_note(widget, chat, operator):
    run(widget, chat, [{"type": "add_note", "text": "VIP, be nice"}], operator)
    message = Message.objects.get(chat=chat)
    assert (message.visibility, message.body, message.agent_id) == ("note", "VIP, be nice", operator.pk)


def test_add_and_remove_labels(widget, chat, captured_events):
    label(widget, "refund")
    label(widget, "vip")
    run(
        widget,
        chat,
        [{"type": "add_labels", "labels": ["vip", "refund"]}, {"type": "remove_labels", "labels": ["vip"]}],
    )
    assert list(ChatLabel.objects.filter(chat=chat).values_list("label__name", flat=True)) == ["refund"]
    changes = [d for t, d in captured_events() if t == "chat.labels_changed"]
    assert [d["labels"] for d in changes] == [["refund", "vip"], ["refund"]]


def test_assign_agent_transfers_the_chat_by_automation(widget, chat, operator, captured_events):
    run(widget, chat, [{"type": "assign_agent", "agent_id": operator.pk}])
    chat.refresh_from_db()
    assert chat.agent_id == operator.pk
    assigned = [d for t, d in captured_events() if t == "chat.assigned"]
    assert assigned[0]["agent_id"] == operator.pk and assigned[0]["by"] == "automation"


def test_assign_agent_to_the_current_owner_changes_nothing(widget, operator, captured_events):
    chat = ChatFactory(contact=ContactFactory(widget=widget), agent=operator)
    run(widget, chat, [{"type": "assign_agent", "agent_id": operator.pk}])
    assert not ChatTransfer.objects.filter(chat=chat).exists() and captured_events() == []


def test_assign_department(widget, chat, captured_events):
    department = Department.objects.create(widget=widget, name="Refunds")
    run(widget, chat, [{"type": "assign_department", "department_id": department.pk}])
    chat.refresh_from_db()
    assert chat.department_id == department.pk


def test_close(widget, chat, captured_events):
    run(widget, chat, [{"type": "close"}])
    chat.refresh_from_db()
    assert chat.status == Chat.Status.EXPIRED
    assert [d["reason"] for t, d in captured_events() if t == "chat.closed"] == ["macro"]


# --- refusals ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["send_message", "add_note", "close"])
def test_a_spam_chat_refuses_with_the_services_own_code(widget, operator, kind):
    chat = ChatFactory(contact=ContactFactory(widget=widget), status=Chat.Status.SPAM)
    action = {"type": kind, "text": "x"} if kind != "close" else {"type": "close"}
    with pytest.raises(MacroActionRefused) as caught:
        run(widget, chat, [action], operator)
    err = caught.value
    assert (err.status, err.code, err.action_index, err.refusal_code) == (
        422,
        "macro_action_refused",
        0,
        "chat_is_spam",
    )
    assert err.extra["refusal"]["detail"] == err.refusal_detail and err.extra["action_type"] == kind


def test_a_label_deleted_since_the_macro_was_stored_is_a_refusal(widget, chat):
    row = label(widget, "vip")
    stored = validate_actions(widget=widget, actions=[{"type": "add_labels", "labels": ["vip"]}], allow_webhook=False)
    chat_services.delete_label(widget=widget, label=row)
    with pytest.raises(MacroActionRefused) as caught:
        run_actions(widget=widget, chat=chat, actions=stored, actor=None, by="macro")
    assert caught.value.extra["refusal"]["code"] == "validation_failed"


@pytest.mark.parametrize("kind", ["assign_agent", "assign_department"])
def test_an_id_gone_since_the_macro_was_stored_is_a_not_found_refusal(widget, chat, kind):
    member = "agent_id" if kind == "assign_agent" else "department_id"
    with pytest.raises(MacroActionRefused) as caught:
        run_actions(widget=widget, chat=chat, actions=[{"type": kind, member: 10**9}], actor=None, by="macro")
    assert caught.value.refusal_code == "not_found"


def test_an_id_of_another_widget_in_a_stored_list_is_refused_at_run_time(widget, other_widget, chat):
    foreign = AgentFactory(widget=other_widget)
    with pytest.raises(MacroActionRefused) as caught:
        run_actions(
            widget=widget, chat=chat, actions=[{"type": "assign_agent", "agent_id": foreign.pk}], actor=None, by="macro"
        )
    assert caught.value.refusal_code == "not_found"
    chat.refresh_from_db()
    assert chat.agent_id is None


def test_a_banned_agent_at_run_time_is_refused(widget, chat):
    banned = AgentFactory(widget=widget, status=Agent.Status.BANNED)
    with pytest.raises(MacroActionRefused) as caught:
        run_actions(
            widget=widget, chat=chat, actions=[{"type": "assign_agent", "agent_id": banned.pk}], actor=None, by="macro"
        )
    assert caught.value.refusal_code == "validation_failed"


def test_send_webhook_without_a_hook_is_refused(widget, chat):
    with pytest.raises(MacroActionRefused):
        run_actions(
            widget=widget,
            chat=chat,
            actions=[{"type": "send_webhook", "url": "https://x.example"}],
            actor=None,
            by="automation",
        )


def test_send_webhook_calls_the_hook(widget, chat):
    seen = []
    actions = [{"type": "send_webhook", "url": "https://x.example"}]
    run_actions(
        widget=widget,
        chat=chat,
        actions=actions,
        actor=None,
        by="automation",
        webhook=lambda c, a: seen.append((c.pk, a)),
    )
    assert seen == [(chat.pk, actions[0])]


# --- all or nothing -------------------------------------------------------------------------------------------


def test_a_refusal_in_the_middle_rolls_back_every_earlier_action(widget, operator):
    chat = ChatFactory(contact=ContactFactory(widget=widget))
    label(widget, "vip")
    outbox_before = OutboxEvent.objects.count()
    gone = AgentFactory(widget=widget)
    actions = validate_actions(
        widget=widget,
        actions=[
            {"type": "send_message", "text": "Hello"},
            {"type": "add_note", "text": "note"},
            {"type": "add_labels", "labels": ["vip"]},
            {"type": "assign_agent", "agent_id": operator.pk},
            {"type": "assign_agent", "agent_id": gone.pk},
            {"type": "close"},
        ],
        allow_webhook=False,
    )
    gone.delete()
    with pytest.raises(MacroActionRefused) as caught:
        run_actions(widget=widget, chat=chat, actions=actions, actor=operator, by="macro")
    assert caught.value.action_index == 4
    chat.refresh_from_db()
    assert not Message.objects.filter(chat=chat).exists()
    assert not ChatLabel.objects.filter(chat=chat).exists()
    assert not ChatTransfer.objects.filter(chat=chat).exists()
    assert chat.agent_id is None and chat.status != Chat.Status.EXPIRED
    assert OutboxEvent.objects.count() == outbox_before


def test_the_problem_body_names_the_action_and_the_refusal(widget):
    err = MacroActionRefused(action_index=2, action_type="close", code="chat_is_spam", detail="Spam.")
    from apps.core.errors import problem_body

    body = problem_body(err, instance="/x")
    assert body["code"] == "macro_action_refused" and body["type"] == "/api/problems/macro_action_refused"
    assert (body["action_index"], body["action_type"], body["refusal"]) == (
        2,
        "close",
        {"code": "chat_is_spam", "detail": "Spam."},
    )
