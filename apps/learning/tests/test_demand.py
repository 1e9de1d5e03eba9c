"""Demand signals: a machine that hands a chat to people records what the visitor asked (end to
end: the AI reply worker's `runtime.answer` and the external operators' `POST /v1/ai/replies`,
through `chat.awaiting_human` and apps.learning's handler), and the tuning cycle reads them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.agents import selectors as agent_selectors
from apps.ai import runtime
from apps.ai.models import AiSettings, DemandSignal
from apps.ai.tests.factories import AiOperatorFactory, AssistantFactory, CredentialFactory
from apps.chats import services as chat_services
from apps.chats.tests.factories import ContactFactory
from apps.learning import demand, selectors
from tests.llm_fake import (
    llm_fake,  # noqa: F401 (the fixture)
    ok,
    server_error,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def bot(widget, llm_fake, monkeypatch):  # noqa: F811 (the fixture above)
    monkeypatch.setattr(agent_selectors, "PRESENCE_SOURCE", lambda widget: set())
    fake = llm_fake("openai", text="Delivery takes two days.")
    AiSettings.objects.create(widget=widget, enabled=True)
    assistant = AssistantFactory(widget=widget, is_default=True, escalation_triggers=["refund"])
    AiOperatorFactory(assistant=assistant)
    CredentialFactory(widget=widget, api_key=fake.api_key, base_url=fake.base_url, model="gpt-4o-mini")
    fake.assistant = assistant
    return fake


def visitor_writes(widget, text):
    contact = ContactFactory(widget=widget)
    return chat_services.post_client_message(widget=widget, contact=contact, data=chat_services.MessageInput(body=text))


def signals(widget):
    return list(DemandSignal.objects.filter(widget=widget).order_by("id").values_list("category", "topic", "count"))


@pytest.mark.parametrize(
    ("answer", "category"),
    [("[KEY_TO_OPERATOR]", "unanswered"), ("key to operator", "unanswered"), ("   ", "unanswered")],
)
def test_an_ai_without_an_answer_records_an_unanswered_signal(bot, widget, answer, category):
    bot.script(ok(answer))
    message = visitor_writes(widget, "  Do you ship to   MARS? ")
    assert runtime.answer(message_id=message.pk) == "handed_off"
    assert signals(widget) == [(category, "do you ship to mars?", 1)]
    assert DemandSignal.objects.get(widget=widget).sample == "  Do you ship to   MARS? "


def test_a_trigger_records_an_escalation_and_a_dead_provider_a_provider_failure(bot, widget):
    assert runtime.answer(message_id=visitor_writes(widget, "I want a refund").pk) == "handed_off"
    bot.script(*[server_error(500)] * 4)
    assert runtime.answer(message_id=visitor_writes(widget, "Where is my order?").pk) == "handed_off"
    assert signals(widget) == [("escalation", "i want a refund", 1), ("provider_failure", "where is my order?", 1)]


def test_an_answered_message_records_nothing(bot, widget):
    assert runtime.answer(message_id=visitor_writes(widget, "How long is delivery?").pk) == "answered"
    assert signals(widget) == []


def test_the_same_question_the_same_day_counts_up_and_the_cycle_reads_it(bot, widget):
    for _ in range(3):
        bot.script(ok("[KEY_TO_OPERATOR]"))
        assert runtime.answer(message_id=visitor_writes(widget, "Do you ship to Mars?").pk) == "handed_off"
    assert signals(widget) == [("unanswered", "do you ship to mars?", 3)]
    now = timezone.now()
    evidence = selectors.count_evidence(widget, bot.assistant, now - timedelta(hours=1), now + timedelta(seconds=1))
    assert evidence.unanswered == 3


def test_a_rolled_back_hand_over_records_nothing(bot, widget, monkeypatch):
    from apps.chats import services

    def fail(**kwargs):
        raise RuntimeError("the hand-over failed after the event")

    original = services.await_human

    def await_then_fail(**kwargs):
        original(**kwargs)
        fail()

    monkeypatch.setattr(services, "await_human", await_then_fail)
    bot.script(ok("[KEY_TO_OPERATOR]"))
    with pytest.raises(RuntimeError):
        runtime.answer(message_id=visitor_writes(widget, "Mars?").pk)
    assert signals(widget) == []


def test_the_categories_of_every_reason():
    assert demand.category_of("marker") == demand.category_of("empty_reply") == "unanswered"
    assert demand.category_of("escalate") == demand.category_of("trigger") == "escalation"
    assert demand.category_of("floor:person_requested") == "escalation"
    assert demand.category_of("floor:secret") == "safety"
    assert demand.category_of("provider_failure") == "provider_failure"
    assert demand.record(widget_id=1, category="unanswered", question="  ") is None
