"""Who may answer (machine_may_answer), the hand-over to people, and the external-answerer hook."""

from collections import defaultdict
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.agents import selectors as agent_selectors
from apps.agents.models import Agent
from apps.ai import handoff, phrases, routing
from apps.ai.models import AiSettings
from apps.ai.tests.factories import AiOperatorFactory, AssistantFactory
from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.chats.tests.factories import ContactFactory
from apps.core import events, ports
from tests.support.factories import AgentFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def ai_operator(widget):
    return AiOperatorFactory(assistant=AssistantFactory(widget=widget))


@pytest.fixture
def person(widget):
    return AgentFactory(widget=widget)


@pytest.fixture
def presence(monkeypatch):
    """presence(ids) sets who is online; presence(None) makes presence unreadable."""

    def set_online(ids):
        def source(widget):
            if ids is None:
                raise ConnectionError("presence store down")
            return set(ids)

        monkeypatch.setattr(agent_selectors, "PRESENCE_SOURCE", source)

    set_online(set())
    return set_online


@pytest.fixture
def internal_events(monkeypatch):
    """[(type, data)] of the internal events emitted during the test."""
    seen = []
    monkeypatch.setattr(events, "_handlers", defaultdict(list, {k: list(v) for k, v in events._handlers.items()}))
    events.subscribe(list(events.INTERNAL), lambda e: seen.append((e.type, dict(e.data))), phase=events.IN_TRANSACTION)
    return seen


def visitor_writes(widget, text="Hello", contact=None, locale=""):
    contact = contact or ContactFactory(widget=widget, locale=locale)
    return chat_services.post_client_message(widget=widget, contact=contact, data=chat_services.MessageInput(body=text))


def reply(widget, chat, agent, text="On it"):
    return chat_services.post_agent_message(
        widget=widget, chat=chat, agent=agent, data=chat_services.MessageInput(body=text)
    )


def fresh(chat):
    return Chat.objects.select_related("widget", "contact", "handled_by").get(pk=chat.pk)


# --- machine_may_answer ---------------------------------------------------------------------------


def test_a_machine_may_answer_a_chat_nobody_handles(widget):
    message = visitor_writes(widget)
    assert handoff.machine_may_answer(chat=fresh(message.chat), now=timezone.now())


def test_a_person_who_accepted_holds_the_chat_until_the_takeover_timeout(widget, person):
    AiSettings.objects.create(widget=widget, takeover_timeout_sec=120)
    message = visitor_writes(widget)
    chat_services.accept_chat(widget=widget, chat=message.chat, agent=person)
    chat = fresh(message.chat)
    assert not handoff.machine_may_answer(chat=chat, now=message.created_at + timedelta(seconds=119))
    assert handoff.machine_may_answer(chat=chat, now=message.created_at + timedelta(seconds=120))


def test_a_person_who_answered_the_last_visitor_message_keeps_the_chat(widget, person):
    AiSettings.objects.create(widget=widget, takeover_timeout_sec=60)
    message = visitor_writes(widget)
    reply(widget, message.chat, person)
    later = timezone.now() + timedelta(hours=1)
    assert not handoff.machine_may_answer(chat=fresh(message.chat), now=later)


def test_the_timeout_counts_from_the_visitors_newest_message(widget, person):
    AiSettings.objects.create(widget=widget, takeover_timeout_sec=60)
    first = visitor_writes(widget)
    reply(widget, first.chat, person)
    second = visitor_writes(widget, "Are you there?", contact=first.chat.contact)
    chat = fresh(first.chat)
    assert not handoff.machine_may_answer(chat=chat, now=second.created_at + timedelta(seconds=59))
    assert handoff.machine_may_answer(chat=chat, now=second.created_at + timedelta(seconds=60))


def test_a_private_note_of_the_person_is_not_an_answer(widget, person):
    AiSettings.objects.create(widget=widget, takeover_timeout_sec=60)
    message = visitor_writes(widget)
    chat_services.accept_chat(widget=widget, chat=message.chat, agent=person)
    chat_services.post_agent_message(
        widget=widget,
        chat=message.chat,
        agent=person,
        data=chat_services.MessageInput(body="note to self", visibility=Message.Visibility.NOTE),
    )
    assert handoff.machine_may_answer(chat=fresh(message.chat), now=timezone.now() + timedelta(seconds=61))


def test_an_external_operator_handling_the_chat_is_not_a_person(widget):
    external = AgentFactory(widget=widget, type=Agent.Type.WEBHOOK)
    message = visitor_writes(widget)
    reply(widget, message.chat, external, "Machine answer")
    chat = fresh(message.chat)
    assert handoff.person_handling(chat) is None
    assert handoff.machine_may_answer(chat=chat, now=timezone.now())


def test_no_machine_answers_a_chat_waiting_for_a_person(widget, ai_operator):
    message = visitor_writes(widget)
    handoff.hand_to_people(widget=widget, chat=message.chat, operator=ai_operator, reason="trigger")
    assert not handoff.machine_may_answer(chat=fresh(message.chat), now=timezone.now() + timedelta(days=1))


def test_no_machine_answers_a_spam_chat(widget):
    message = visitor_writes(widget)
    chat_services.set_chat_state(widget=widget, chat=message.chat, state=Chat.Status.SPAM)
    assert not handoff.machine_may_answer(chat=fresh(message.chat), now=timezone.now())


# --- hand_to_people ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("online", "presence_context", "key"),
    [
        ("person", True, "handoff_to_human"),
        ("nobody", True, "handover_offline"),
        ("nobody", False, "handover_unknown"),
        ("unreadable", True, "handover_unknown"),
        ("person", False, "handoff_to_human"),
    ],
)
@pytest.mark.parametrize(("text", "lang"), [("Позовите человека", "ru"), ("Γεια σας", "el"), ("我要人工", "zh")])
def test_the_phrase_is_in_the_visitors_language_and_follows_presence(
    widget, ai_operator, person, presence, online, presence_context, key, text, lang
):
    AiSettings.objects.create(widget=widget, presence_context_enabled=presence_context)
    presence({"person": {person.pk}, "nobody": set(), "unreadable": None}[online])
    message = visitor_writes(widget, text)
    posted = handoff.hand_to_people(
        widget=widget, chat=message.chat, operator=ai_operator, reason="trigger", question=text
    )
    assert posted.body == phrases.DEFAULTS[key][lang]
    assert posted.origin == handoff.HANDOFF_ORIGIN


def test_an_online_ai_operator_is_not_a_person_online(widget, ai_operator, presence):
    presence({ai_operator.pk})
    message = visitor_writes(widget, "Help")
    posted = handoff.hand_to_people(widget=widget, chat=message.chat, operator=ai_operator, reason="trigger")
    assert posted.body == phrases.DEFAULTS["handover_offline"]["en"]


def test_the_contact_locale_chooses_when_the_message_does_not(widget, ai_operator, person, presence):
    presence({person.pk})
    message = visitor_writes(widget, "ok", locale="de-DE")
    posted = handoff.hand_to_people(widget=widget, chat=message.chat, operator=ai_operator, reason="x", question="ok")
    assert posted.body == phrases.DEFAULTS["handoff_to_human"]["de"]


def test_the_owners_phrase_override_is_used(widget, ai_operator, person, presence):
    AiSettings.objects.create(widget=widget, phrases={"handoff_to_human": {"en": "A colleague joins you now."}})
    presence({person.pk})
    message = visitor_writes(widget, "I need a human please")
    posted = handoff.hand_to_people(
        widget=widget, chat=message.chat, operator=ai_operator, reason="marker", question=message.body
    )
    assert posted.body == "A colleague joins you now."


def test_the_handover_accepts_as_ai_and_the_chat_waits(widget, ai_operator, captured_events, internal_events):
    message = visitor_writes(widget, "human!")
    posted = handoff.hand_to_people(widget=widget, chat=message.chat, operator=ai_operator, reason="trigger")
    chat = fresh(message.chat)
    assert posted.visibility == Message.Visibility.PUBLIC and posted.author_kind == Message.Author.AI
    assert chat.awaiting_human_since is not None
    assert (chat.accepted_by_id, chat.accepted_by_type, chat.handling) == (ai_operator.pk, "ai", "ai")
    types = [t for t, _ in captured_events()]
    assert types.count("chat.accepted") == 1 and types[-1] == "message.created"
    accepted = next(d for t, d in captured_events() if t == "chat.accepted")
    assert accepted["operator_type"] == "ai"
    assert ("chat.awaiting_human", {"chat_id": chat.pk, "reason": "trigger"}) in internal_events


def test_in_shadow_mode_the_phrase_is_a_note_that_never_accepts(widget, ai_operator, captured_events):
    AiSettings.objects.create(widget=widget, shadow_mode=True)
    message = visitor_writes(widget)
    posted = handoff.hand_to_people(widget=widget, chat=message.chat, operator=ai_operator, reason="trigger")
    chat = fresh(message.chat)
    assert posted.visibility == Message.Visibility.NOTE
    assert chat.accepted_by_id is None and chat.handling == "missed"
    assert chat.awaiting_human_since is not None
    assert "chat.accepted" not in [t for t, _ in captured_events()]


def test_a_second_handover_posts_nothing(widget, ai_operator, internal_events):
    message = visitor_writes(widget)
    assert handoff.hand_to_people(widget=widget, chat=message.chat, operator=ai_operator, reason="a")
    assert handoff.hand_to_people(widget=widget, chat=message.chat, operator=ai_operator, reason="b") is None
    assert Message.objects.filter(chat=message.chat, origin=handoff.HANDOFF_ORIGIN).count() == 1
    assert [t for t, _ in internal_events].count("chat.awaiting_human") == 1


def test_a_persons_answer_ends_the_wait_as_ai_to_human(widget, ai_operator, person):
    message = visitor_writes(widget)
    handoff.hand_to_people(widget=widget, chat=message.chat, operator=ai_operator, reason="trigger")
    reply(widget, message.chat, person, "Hi, I am Anna")
    chat = fresh(message.chat)
    assert chat.awaiting_human_since is None
    assert chat.handling == Chat.Handling.AI_TO_HUMAN
    assert (chat.handled_by_id, chat.accepted_by_id) == (person.pk, ai_operator.pk)


def test_a_persons_explicit_accept_ends_the_wait(widget, ai_operator, person):
    message = visitor_writes(widget)
    handoff.hand_to_people(widget=widget, chat=message.chat, operator=ai_operator, reason="trigger")
    chat_services.accept_chat(widget=widget, chat=message.chat, agent=person)
    assert fresh(message.chat).awaiting_human_since is None


def test_a_machine_message_does_not_end_the_wait(widget, ai_operator):
    message = visitor_writes(widget)
    handoff.hand_to_people(widget=widget, chat=message.chat, operator=ai_operator, reason="trigger")
    reply(widget, message.chat, ai_operator, "still me")
    assert fresh(message.chat).awaiting_human_since is not None


def test_an_operator_of_another_widget_is_refused(widget, other_widget):
    stranger = AiOperatorFactory(assistant=AssistantFactory(widget=other_widget))
    message = visitor_writes(widget)
    with pytest.raises(AssertionError):
        handoff.hand_to_people(widget=widget, chat=message.chat, operator=stranger, reason="x")
    assert fresh(message.chat).awaiting_human_since is None


# --- the external answerer hook ---------------------------------------------------------------------


@pytest.fixture
def hook(provide_port):
    """Provide the external answerer port for the test (None: nothing provides it)."""
    provide_port(ports.EXTERNAL_ANSWERER, None)
    return lambda fn: provide_port(ports.EXTERNAL_ANSWERER, fn)


def test_without_an_external_answerer_nothing_is_dispatched(widget, hook):
    message = visitor_writes(widget)
    assert routing.dispatch_to_external(message.chat, message) is False


def test_the_registered_answerer_gets_the_chat_and_message(widget, hook):
    calls = []
    hook(lambda chat, message: calls.append((chat.pk, message.pk)) or True)
    message = visitor_writes(widget)
    assert routing.dispatch_to_external(message.chat, message) is True
    assert calls == [(message.chat_id, message.pk)]
    hook(lambda chat, message: False)
    assert routing.dispatch_to_external(message.chat, message) is False
