"""Each widget's share of the `ai` worker (apps.ai.runtime.turns) and the hand-overs that ask no
provider: against the loopback OpenAI fake, the task bodies called directly. A real `ai` worker
process with a slow tenant is tests/test_abuse_slow_ai_worker.py."""

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.agents import selectors as agent_selectors
from apps.ai import assist, phrases, runtime
from apps.ai.models import AiSettings, ReplyClaim
from apps.ai.runtime import answering, enqueueing, turns
from apps.ai.tests.factories import AiOperatorFactory, AssistantFactory, CredentialFactory
from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.chats.tests.factories import ContactFactory
from tests.llm_fake import Reply

pytestmark = pytest.mark.django_db

ANSWER = "Delivery takes two days."
STALL_SECONDS = 20.0  # the provider answers this late, with an error
PROMPT_SECONDS = 10.0  # a hand-over without a provider call takes well under a second


@pytest.fixture(autouse=True)
def nobody_online(monkeypatch):
    monkeypatch.setattr(agent_selectors, "PRESENCE_SOURCE", lambda widget: set())


@pytest.fixture
def bot(widget, llm_fake):
    fake = llm_fake("openai", text=ANSWER)
    AiSettings.objects.create(widget=widget, enabled=True)
    assistant = AssistantFactory(
        widget=widget, is_default=True, system_prompt="You sell tea.", escalation_triggers=["refund"]
    )
    operator = AiOperatorFactory(assistant=assistant)
    CredentialFactory(widget=widget, api_key=fake.api_key, base_url=fake.base_url, model="gpt-4o-mini")
    return type("Bot", (), {"fake": fake, "assistant": assistant, "operator": operator})


@pytest.fixture
def sent(monkeypatch):
    """The tasks a waiting answer sends itself again with (as a worker does: not eagerly)."""
    calls = []
    monkeypatch.setattr(answering, "runs_eagerly", lambda: False)
    monkeypatch.setattr(
        enqueueing, "enqueue", lambda message_id, countdown=None: calls.append((message_id, countdown)) or True
    )
    return calls


def visitor_writes(widget, text="How long is delivery?"):
    contact = ContactFactory(widget=widget)
    return chat_services.post_client_message(widget=widget, contact=contact, data=chat_services.MessageInput(body=text))


def take_every_slot(widget):
    """The widget's other tasks hold every slot (AI_WIDGET_SLOTS of them)."""
    held = [turns.slots().acquire(widget.pk) for _ in range(turns.slots().count)]
    assert all(held)
    return held


def ai_messages(chat):
    return list(Message.objects.filter(chat_id=chat.pk, author_kind="ai").order_by("id"))


# --- an escalation trigger hands over at once ---------------------------------------------------------


def test_a_trigger_hands_over_at_once_without_asking_a_stalling_provider(bot, widget):
    # given a provider that answers 20 s late with an error
    bot.fake.script(Reply(500, delay=STALL_SECONDS), Reply(500, delay=STALL_SECONDS))
    message = visitor_writes(widget, "I want a REFUND for my tea")
    started = time.monotonic()
    assert runtime.answer(message_id=message.pk) == "handed_off"
    # then the hand-over phrase is posted at once and the provider was not asked for an answer
    assert time.monotonic() - started < PROMPT_SECONDS
    assert bot.fake.api_requests == []
    [phrase] = ai_messages(message.chat)
    assert phrase.body == phrases.DEFAULTS["handover_offline"]["en"]
    claim = ReplyClaim.objects.get(message=message)
    assert (claim.state, claim.detail, claim.provider_ms) == ("handed_off", "escalation_outcome", 0.0)
    assert Chat.objects.get(pk=message.chat_id).awaiting_human_since is not None


def test_a_trigger_hands_over_while_every_slot_of_the_widget_is_taken(bot, widget, sent):
    take_every_slot(widget)
    message = visitor_writes(widget, "refund please")
    assert runtime.answer(message_id=message.pk) == "handed_off"
    assert sent == [] and bot.fake.api_requests == []


def test_the_summary_after_a_trigger_comes_after_the_hand_over_phrase(
    bot, widget, django_capture_on_commit_callbacks, monkeypatch
):
    summaries = []
    monkeypatch.setattr(assist, "send_summary", lambda **ids: summaries.append(ids))
    message = visitor_writes(widget, "refund please")
    with django_capture_on_commit_callbacks(execute=True):
        assert runtime.answer(message_id=message.pk) == "handed_off"
    # the hand-over committed with its phrase before the summary task was even sent
    assert summaries == [{"chat_id": message.chat_id, "operator_id": bot.operator.pk}]
    assert [m.body for m in ai_messages(message.chat)] == [phrases.DEFAULTS["handover_offline"]["en"]]


# --- the widget's share of the worker -------------------------------------------------------------------


def test_over_the_cap_a_task_waits_without_a_claim_or_a_provider_call(bot, widget, sent):
    # given the widget's other tasks hold every slot
    held = take_every_slot(widget)
    message = visitor_writes(widget)
    # when its task runs, it holds nothing: it sends itself again a few seconds later
    assert runtime.answer(message_id=message.pk) == "waiting"
    [(message_id, countdown)] = sent
    assert message_id == message.pk and 0 < countdown <= turns.WAIT_SECONDS[1] * 1.2
    assert bot.fake.api_requests == [] and not ReplyClaim.objects.filter(message=message).exists()
    # and the beat job does not send it a second time while it waits
    assert turns.waiting([message.pk]) == {message.pk}
    later = timezone.now() + runtime.REDRIVE_AFTER + timedelta(seconds=5)
    assert message.pk in runtime.lost_messages(now=later)
    assert runtime.redrive(now=later) == 0 and len(sent) == 1
    # when a slot comes free, the task that comes back answers
    turns.slots().release(held[0])
    assert runtime.answer(message_id=message.pk) == "answered"
    assert [m.body for m in ai_messages(message.chat)] == [ANSWER]


def test_a_task_gives_its_slot_back_when_it_is_done(bot, widget):
    first, second = visitor_writes(widget), visitor_writes(widget)
    assert runtime.answer(message_id=first.pk) == "answered"
    bot.fake.script(Reply(500), Reply(500), Reply(500), Reply(500))
    assert runtime.answer(message_id=second.pk) == "handed_off"  # a provider failure gives it back too
    assert len(take_every_slot(widget)) == turns.slots().count


def test_another_widgets_full_share_leaves_this_widget_its_own(bot, widget, sent):
    other = AssistantFactory().widget
    take_every_slot(other)
    message = visitor_writes(widget)
    assert runtime.answer(message_id=message.pk) == "answered"
    assert sent == []


def test_a_message_that_waited_out_the_longest_wait_is_handed_to_people(bot, widget, sent):
    take_every_slot(widget)
    message = visitor_writes(widget)
    # (written that long ago, after the AI was switched on)
    long_ago = timezone.now() - runtime.LONGEST_WAIT - timedelta(seconds=1)
    AiSettings.objects.filter(widget=widget).update(enabled_at=long_ago - timedelta(seconds=1))
    Message.objects.filter(pk=message.pk).update(created_at=long_ago)
    assert runtime.answer(message_id=message.pk) == "handed_off"
    assert sent == [] and bot.fake.api_requests == []
    assert ReplyClaim.objects.get(message=message).detail == runtime.AI_BUSY
    assert [m.body for m in ai_messages(message.chat)] == [phrases.DEFAULTS["handover_offline"]["en"]]


def test_a_cache_that_does_not_answer_counts_nothing(bot, widget, monkeypatch):
    def down(*args, **kwargs):
        raise turns.SlotStoreUnavailable("cache down")

    monkeypatch.setattr(turns.Slots, "acquire", down)
    message = visitor_writes(widget)
    assert runtime.answer(message_id=message.pk) == "answered"


# --- the hand-over summary ---------------------------------------------------------------------------------


def test_a_summary_over_the_cap_waits_and_gives_up_after_the_longest_wait(bot, widget, monkeypatch):
    resent = []
    monkeypatch.setattr(runtime, "runs_eagerly", lambda: False)
    monkeypatch.setattr(assist, "send_summary", lambda **kwargs: resent.append(kwargs) or True)
    take_every_slot(widget)
    chat = Chat.objects.get(pk=visitor_writes(widget).chat_id)
    assert assist.summarise_handover(chat_id=chat.pk, operator_id=bot.operator.pk) == "waiting"
    [again] = resent
    assert (again["chat_id"], again["operator_id"]) == (chat.pk, bot.operator.pk)
    assert 0 < again["countdown"] <= turns.WAIT_SECONDS[1] * 1.2
    long_ago = time.time() - runtime.LONGEST_WAIT.total_seconds() - 1
    assert assist.summarise_handover(chat_id=chat.pk, operator_id=bot.operator.pk, since=long_ago) == "busy"
    assert len(resent) == 1 and bot.fake.api_requests == []


@pytest.mark.parametrize(("waited", "low", "high"), [(0, 0.4, 0.6), (10, 0.8, 1.2), (120, 2.4, 3.6)])
def test_a_task_waits_longer_the_longer_its_message_waited(waited, low, high):
    # a burst on a prompt provider finds a slot within a second; a slow provider's queue asks every 3 s
    assert all(low <= turns.wait_seconds(waited) <= high for _ in range(50))


def test_a_summary_waits_on_the_provider_less_than_an_answer():
    assert runtime.SUMMARY_DEADLINE_SECONDS < runtime.PROVIDER_DEADLINE_SECONDS
