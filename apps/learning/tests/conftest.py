"""Fixtures of the self-learning and wish tests: an assistant with an AI operator, a widget-wide
credential on a loopback fake provider, and evidence (escalated and low-rated chats, unanswered
questions) in the chats that operator answered."""

import itertools
import json

import pytest
from django.utils import timezone

from apps.ai.models import AiSettings
from apps.ai.tests.factories import AiOperatorFactory, AssistantFactory, CredentialFactory, DemandSignalFactory
from apps.chats.models import Chat, Message, Rating
from apps.chats.tests.factories import ChatFactory, ContactFactory, MessageFactory
from apps.support.models import SUPPORT_REPLY_ORIGIN
from tests.llm_fake import llm_fake  # noqa: F401 (the fixture)

_keys = itertools.count()

PERSONA = "Вы вежливый консультант магазина обуви. Отвечайте коротко."
PROMPT = "Answer about shoes only. Never guess a size; ask for the foot length."
# What a cycle applies by itself: it removes and keeps sentences, it adds none (apps.learning.review).
PROPOSAL = {
    "persona": "Вы вежливый консультант магазина обуви.",
    "system_prompt": "Answer about shoes only.",
    "rationale": "Visitors were handed over after short answers; the size rule sent them away.",
}
SUPPORT_SECRET = "support-reply-never-a-reference"


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"learn-key-{next(_keys)}"}


@pytest.fixture
def client(api):
    return api(["ai:read", "ai:write", "ai:apply"])


@pytest.fixture
def assistant(widget):
    return AssistantFactory(widget=widget, is_default=True, persona=PERSONA, system_prompt=PROMPT)


@pytest.fixture
def operator(assistant):
    return AiOperatorFactory(assistant=assistant)


@pytest.fixture
def provider(widget, request):
    """A widget-wide credential on a fake that proposes PROPOSAL."""
    fake = request.getfixturevalue("llm_fake")("openai", text=json.dumps(PROPOSAL, ensure_ascii=False))
    CredentialFactory(widget=widget, api_key=fake.api_key, base_url=fake.base_url)
    return fake


@pytest.fixture
def switch_on(widget):
    AiSettings.objects.update_or_create(widget=widget, defaults={"autonomous_tuning_enabled": True})


def make_evidence(widget, operator, *, escalations=2, low_ratings=2, unanswered=1):
    """Chats the AI operator answered: `escalations` handed to a person (one also carries a support
    reply), `low_ratings` rated 1; `unanswered` demand signals."""
    now = timezone.now()
    for i in range(escalations):
        chat = ChatFactory(contact=ContactFactory(widget=widget), handling=Chat.Handling.AI_TO_HUMAN, handled_at=now)
        MessageFactory(chat=chat, body=f"Когда доставка? {i}")
        MessageFactory(chat=chat, body="Не знаю.", author_kind=Message.Author.AI, agent=operator)
        if i == 0:
            MessageFactory(
                chat=chat, body=SUPPORT_SECRET, author_kind=Message.Author.AGENT, origin=SUPPORT_REPLY_ORIGIN
            )
    for i in range(low_ratings):
        chat = ChatFactory(contact=ContactFactory(widget=widget), handling=Chat.Handling.AI)
        MessageFactory(chat=chat, body=f"Есть размер 46? {i}")
        MessageFactory(chat=chat, body="Уточните у менеджера.", author_kind=Message.Author.AI, agent=operator)
        Rating.objects.create(widget=widget, chat=chat, value=1, comment="бесполезно")
    for _ in range(unanswered):
        DemandSignalFactory(widget=widget, category="unanswered", topic="gift cards", count=1)
