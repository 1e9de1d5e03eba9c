"""Business hours in the AI hand-over: `ai_only` never hands over while closed and posts the
`outside_hours` phrase; presence reads `offline` outside the hours whoever is connected."""

import uuid
from datetime import UTC, datetime

import pytest

from apps.agents import selectors as agent_selectors
from apps.ai import handoff, phrases
from apps.ai.models import AiSettings
from apps.ai.tests.factories import AiOperatorFactory, AssistantFactory
from apps.chats import services as chat_services
from apps.chats.models import Chat
from apps.chats.tests.factories import ContactFactory
from apps.widget import services as widget_services
from tests.support.factories import AgentFactory

pytestmark = pytest.mark.django_db

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
# Saturday 7 November 2026, 12:00 in Berlin: closed; the next opening is Monday 09:00.
SATURDAY_NOON = datetime(2026, 11, 7, 11, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _own_cache(settings):
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": uuid.uuid4().hex}
    }


@pytest.fixture
def ai_operator(widget):
    return AiOperatorFactory(assistant=AssistantFactory(widget=widget))


@pytest.fixture
def saturday(monkeypatch):
    """The hours are read at Saturday noon in Berlin."""
    from apps.widget import selectors

    real = selectors.business_hours_state
    monkeypatch.setattr(
        selectors, "business_hours_state", lambda widget, now=None, **kw: real(widget, now=SATURDAY_NOON, **kw)
    )


def set_hours(widget, mode, holidays=()):
    weekly = {day: [["09:00", "18:00"]] if day in DAYS[:5] else [] for day in DAYS}
    body = {"enabled": True, "timezone": "Europe/Berlin", "weekly": weekly, "holidays": list(holidays)}
    widget_services.set_business_hours(widget=widget, body={**body, "outside_hours": mode})


def visitor_writes(widget, text="Hello", locale=""):
    contact = ContactFactory(widget=widget, locale=locale)
    return chat_services.post_client_message(widget=widget, contact=contact, data=chat_services.MessageInput(body=text))


def test_ai_only_never_hands_over_while_closed(widget, ai_operator, saturday):
    set_hours(widget, "ai_only")
    message = visitor_writes(widget, "I want a human", locale="en")
    posted = handoff.hand_to_people(
        widget=widget, chat=message.chat, operator=ai_operator, reason="trigger", question=message.body
    )
    chat = Chat.objects.get(pk=message.chat_id)
    assert chat.awaiting_human_since is None
    assert posted.origin == handoff.OUTSIDE_HOURS_ORIGIN
    assert posted.body == "We are closed right now. An operator will reply when we open 09:00 09.11."


def test_the_outside_hours_phrase_is_in_the_visitors_language(widget, ai_operator, saturday):
    set_hours(widget, "ai_only")
    message = visitor_writes(widget, "Позовите оператора")
    posted = handoff.hand_to_people(
        widget=widget, chat=message.chat, operator=ai_operator, reason="trigger", question=message.body
    )
    assert posted.body == phrases.DEFAULTS["outside_hours"]["ru"].replace("{opens_at}", "09:00 09.11")


def test_opens_at_is_removed_when_there_is_no_opening_within_14_days(widget, ai_operator, saturday):
    holidays = [f"2026-11-{day:02d}" for day in range(9, 28)]
    set_hours(widget, "ai_only", holidays)
    message = visitor_writes(widget, "help", locale="en")
    posted = handoff.hand_to_people(widget=widget, chat=message.chat, operator=ai_operator, reason="trigger")
    assert posted.body == "We are closed right now. An operator will reply when we open."


def test_the_owners_override_of_outside_hours_is_used(widget, ai_operator, saturday):
    set_hours(widget, "ai_only")
    AiSettings.objects.create(widget=widget, phrases={"outside_hours": {"en": "Back on {opens_at}, promise."}})
    message = visitor_writes(widget, "help", locale="en")
    posted = handoff.hand_to_people(widget=widget, chat=message.chat, operator=ai_operator, reason="trigger")
    assert posted.body == "Back on 09:00 09.11, promise."


@pytest.mark.parametrize("mode", ["offline_form", "hidden"])
def test_other_modes_hand_over_as_usual_with_nobody_online(widget, ai_operator, saturday, mode, monkeypatch):
    person = AgentFactory(widget=widget)
    monkeypatch.setattr(agent_selectors, "PRESENCE_SOURCE", lambda widget: {person.pk})
    set_hours(widget, mode)
    AiSettings.objects.create(widget=widget, presence_context_enabled=True)
    message = visitor_writes(widget, "help", locale="en")
    posted = handoff.hand_to_people(widget=widget, chat=message.chat, operator=ai_operator, reason="trigger")
    assert posted.body == phrases.DEFAULTS["handover_offline"]["en"]
    assert Chat.objects.get(pk=message.chat_id).awaiting_human_since is not None


def test_presence_reads_offline_outside_hours_whoever_is_connected(widget, saturday, monkeypatch):
    person = AgentFactory(widget=widget)
    monkeypatch.setattr(agent_selectors, "PRESENCE_SOURCE", lambda widget: {person.pk})
    assert handoff.operators_state(widget) == "online"
    set_hours(widget, "ai_only")
    assert handoff.operators_state(widget) == "offline"


def test_ai_only_hands_over_inside_the_hours(widget, ai_operator, monkeypatch):
    from apps.widget import selectors

    real = selectors.business_hours_state
    monday = datetime(2026, 11, 9, 10, 0, tzinfo=UTC)
    monkeypatch.setattr(
        selectors, "business_hours_state", lambda widget, now=None, **kw: real(widget, now=monday, **kw)
    )
    set_hours(widget, "ai_only")
    message = visitor_writes(widget, "help", locale="en")
    posted = handoff.hand_to_people(widget=widget, chat=message.chat, operator=ai_operator, reason="trigger")
    assert posted.origin == handoff.HANDOFF_ORIGIN
    assert Chat.objects.get(pk=message.chat_id).awaiting_human_since is not None
