"""Agent assist against the loopback OpenAI fake: the hand-over summary (a private note of the AI
operator, in the widget's language, cut to five lines, sent after the hand-over commits) and the
suggested reply (the effective assistant's pipeline, grounded in the knowledge base, posted nowhere)."""

import time

import pytest

from apps.agents import selectors as agent_selectors
from apps.ai import assist, errors, handoff, pipeline, runtime
from apps.ai.models import AiSettings, Alert
from apps.ai.tests.factories import AiOperatorFactory, AssistantFactory, CredentialFactory
from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.chats.tests.factories import ContactFactory
from apps.erasure.models import PendingErasure
from apps.kb import hooks as kb_hooks
from apps.kb import services as kb_services
from apps.widget.models import WidgetSettings
from tests.llm_fake import ok, server_error, slow

pytestmark = pytest.mark.django_db

SUMMARY = "The visitor wants a refund for order 12.\nThe AI could not decide it."


@pytest.fixture(autouse=True)
def nobody_online(monkeypatch):
    monkeypatch.setattr(agent_selectors, "PRESENCE_SOURCE", lambda widget: set())


@pytest.fixture
def bot(widget, llm_fake):
    fake = llm_fake("openai", text=SUMMARY)
    AiSettings.objects.create(widget=widget, enabled=True)
    assistant = AssistantFactory(widget=widget, is_default=True, system_prompt="You sell tea.", temperature=0.2)
    operator = AiOperatorFactory(assistant=assistant)
    CredentialFactory(widget=widget, api_key=fake.api_key, base_url=fake.base_url, model="gpt-4o-mini")
    return type("Bot", (), {"fake": fake, "assistant": assistant, "operator": operator})


def conversation(widget, *texts):
    contact = ContactFactory(widget=widget)
    message = None
    for text in texts:
        message = chat_services.post_client_message(
            widget=widget, contact=contact, data=chat_services.MessageInput(body=text)
        )
    return Chat.objects.get(pk=message.chat_id)


def notes(chat):
    return list(Message.objects.filter(chat_id=chat.pk, visibility="note").order_by("id"))


def hand_over(widget, chat, operator, django_capture_on_commit_callbacks, *, execute=True):
    with django_capture_on_commit_callbacks(execute=execute) as callbacks:
        handoff.hand_to_people(widget=widget, chat=chat, operator=operator, reason="marker")
    return callbacks


# --- the hand-over summary -----------------------------------------------------------------------------------


def test_a_hand_over_by_the_ai_adds_its_summary_as_a_private_note(
    bot, widget, django_capture_on_commit_callbacks, captured_events
):
    chat = conversation(widget, "I want a refund for order 12")
    hand_over(widget, chat, bot.operator, django_capture_on_commit_callbacks)
    [note] = notes(chat)
    assert (note.body, note.author_kind, note.agent_id, note.origin) == (
        SUMMARY,
        "ai",
        bot.operator.pk,
        assist.SUMMARY_ORIGIN,
    )
    prompt = bot.fake.requests[-1].json()["messages"]
    assert prompt[0]["content"] == pipeline.SUMMARY_INSTRUCTIONS["en"]
    assert "Visitor: I want a refund for order 12" in prompt[1]["content"]
    # the handover phrase the visitor saw is part of the conversation summarised
    assert "Operator: " in prompt[1]["content"]
    # a note like the console's: message.created for it, and the chat still waits for a person
    created = [d for t, d in captured_events() if t == "message.created" and d.get("message_id") == note.pk]
    assert created
    assert Chat.objects.get(pk=chat.pk).awaiting_human_since is not None


def test_the_summary_is_in_the_widgets_language(bot, widget, django_capture_on_commit_callbacks):
    WidgetSettings.objects.update_or_create(widget=widget, defaults={"values": {"widget_default_language": "ru"}})
    bot.fake.script(ok("Посетитель просит вернуть деньги за заказ 12."))
    chat = conversation(widget, "I want a refund for order 12")
    hand_over(widget, chat, bot.operator, django_capture_on_commit_callbacks)
    prompt = bot.fake.requests[-1].json()["messages"]
    assert prompt[0]["content"] == pipeline.SUMMARY_INSTRUCTIONS["ru"]
    assert "Посетитель: I want a refund for order 12" in prompt[1]["content"]
    assert [n.body for n in notes(chat)] == ["Посетитель просит вернуть деньги за заказ 12."]


def test_a_longer_summary_is_cut_to_five_lines(bot, widget, django_capture_on_commit_callbacks):
    bot.fake.script(ok("\n".join(f"line {i}" for i in range(1, 9)) + "\n"))
    chat = conversation(widget, "Help")
    hand_over(widget, chat, bot.operator, django_capture_on_commit_callbacks)
    [note] = notes(chat)
    assert note.body == "line 1\nline 2\nline 3\nline 4\nline 5"


def test_control_characters_of_the_summary_are_dropped(bot, widget, django_capture_on_commit_callbacks):
    bot.fake.script(ok("The visitor\x00 wants a refund.\x07\nNothing answered."))
    chat = conversation(widget, "Help")
    hand_over(widget, chat, bot.operator, django_capture_on_commit_callbacks)
    [note] = notes(chat)
    assert note.body == "The visitor wants a refund.\nNothing answered."


def test_a_provider_failure_writes_no_note_and_raises_the_provider_alert(
    bot, widget, django_capture_on_commit_callbacks
):
    bot.fake.script(*[server_error(503)] * 5)
    chat = conversation(widget, "Help")
    hand_over(widget, chat, bot.operator, django_capture_on_commit_callbacks)
    assert notes(chat) == []
    [alert] = Alert.objects.filter(widget=widget)
    assert alert.kind == runtime.ALERT_KIND and alert.details["kind"] == "server_error"
    # the hand-over itself stands
    assert Chat.objects.get(pk=chat.pk).awaiting_human_since is not None


def test_with_handover_summary_off_no_note_is_written(bot, widget, django_capture_on_commit_callbacks):
    AiSettings.objects.filter(widget=widget).update(handover_summary=False)
    chat = conversation(widget, "Help")
    hand_over(widget, chat, bot.operator, django_capture_on_commit_callbacks)
    assert notes(chat) == [] and bot.fake.api_requests == []


def test_the_summary_never_delays_the_hand_over(bot, widget, django_capture_on_commit_callbacks, monkeypatch):
    """The hand-over commits without a provider call; the summary is a task sent after the commit,
    and a hanging provider only makes that task give up (no note, the alert)."""
    bot.fake.script(slow(5, "too late"), slow(5, "too late"))
    sent = []
    monkeypatch.setattr(assist, "send_summary", lambda **ids: sent.append(ids))
    chat = conversation(widget, "Help")
    started = time.monotonic()
    hand_over(widget, chat, bot.operator, django_capture_on_commit_callbacks)
    assert time.monotonic() - started < 2
    assert bot.fake.api_requests == []
    assert sent == [{"chat_id": chat.pk, "operator_id": bot.operator.pk}]
    assert Chat.objects.get(pk=chat.pk).awaiting_human_since is not None
    # the task, on its worker: the provider hangs past the summary's deadline
    monkeypatch.setattr(runtime.limits, "SUMMARY_DEADLINE_SECONDS", 0.5)
    assert assist.summarise_handover(chat_id=chat.pk, operator_id=bot.operator.pk) == "provider_failure"
    assert notes(chat) == [] and Alert.objects.filter(widget=widget, kind=runtime.ALERT_KIND).exists()


def test_the_summary_task_goes_to_the_ai_queue_once_the_hand_over_commits(
    bot, widget, django_capture_on_commit_callbacks, monkeypatch
):
    from apps.ai import tasks

    queued = []
    monkeypatch.setattr(tasks.summarise_handover, "apply_async", lambda args, **options: queued.append((args, options)))
    chat = conversation(widget, "Help")
    hand_over(widget, chat, bot.operator, django_capture_on_commit_callbacks)
    assert queued == [((chat.pk, bot.operator.pk), {"queue": runtime.QUEUE})]


def test_an_external_operators_hand_over_gets_no_summary(bot, widget, django_capture_on_commit_callbacks):
    from tests.support.factories import AgentFactory

    external = AgentFactory(widget=widget, type="webhook")
    chat = conversation(widget, "Help")
    hand_over(widget, chat, external, django_capture_on_commit_callbacks)
    assert notes(chat) == [] and bot.fake.api_requests == []


def test_a_chat_closed_before_the_summary_gets_no_note(bot, widget, django_capture_on_commit_callbacks):
    chat = conversation(widget, "Help")
    hand_over(widget, chat, bot.operator, django_capture_on_commit_callbacks, execute=False)
    chat_services.close_chat(widget=widget, chat=chat)
    assert assist.summarise_handover(chat_id=chat.pk, operator_id=bot.operator.pk) == "closed"
    assert notes(chat) == [] and Chat.objects.get(pk=chat.pk).status == "expired"


def test_a_contact_under_erasure_gets_no_summary_and_nothing_goes_to_the_provider(
    bot, widget, django_capture_on_commit_callbacks
):
    chat = conversation(widget, "My e-mail is anna@example.com, refund please")
    hand_over(widget, chat, bot.operator, django_capture_on_commit_callbacks, execute=False)
    PendingErasure.objects.create(widget=widget, contact_id=chat.contact_id)
    assert assist.summarise_handover(chat_id=chat.pk, operator_id=bot.operator.pk) == "gone"
    assert bot.fake.api_requests == [] and notes(chat) == []


def test_an_erasure_accepted_while_the_summary_is_written_posts_no_note(
    bot, widget, django_capture_on_commit_callbacks, monkeypatch
):
    chat = conversation(widget, "Help")
    hand_over(widget, chat, bot.operator, django_capture_on_commit_callbacks, execute=False)
    real_complete = assist.complete

    def complete_while_the_erasure_is_accepted(*args, **kwargs):
        PendingErasure.objects.create(widget=widget, contact_id=chat.contact_id)
        return real_complete(*args, **kwargs)

    monkeypatch.setattr(assist, "complete", complete_while_the_erasure_is_accepted)
    assert assist.summarise_handover(chat_id=chat.pk, operator_id=bot.operator.pk) == "gone"
    assert notes(chat) == []


def test_the_ai_operator_at_work_hands_over_with_a_summary(bot, widget, django_capture_on_commit_callbacks):
    bot.fake.script(ok(pipeline.HANDOFF_MARKER), ok(SUMMARY))
    chat = conversation(widget, "Something odd happened with my order")
    with django_capture_on_commit_callbacks(execute=True):
        assert runtime.answer(message_id=chat.last_message_id) == "handed_off"
    assert [n.body for n in notes(chat)] == [SUMMARY]


# --- the suggested reply ---------------------------------------------------------------------------------------


def rule(widget, content, doc_id=None):
    return kb_services.create_rule(
        widget=widget, content=content, doc_id=doc_id, embedded=kb_hooks.embed(widget, [content])
    )


def test_a_suggestion_is_grounded_in_a_knowledge_base_rule_and_cites_it(bot, widget):
    bot.assistant.rag_enabled = True
    bot.assistant.save()
    found = rule(widget, "Tea ships from Yunnan within two days.", doc_id="Shipping")
    rule(widget, "Gift cards never expire.")
    bot.fake.script(ok("It ships within two days."), path="chat/completions")
    chat = conversation(widget, "Hello", "When does my tea ship from Yunnan?")
    suggestion = assist.suggest_reply(widget=widget, chat=chat)
    assert suggestion.text == "It ships within two days."
    assert {"source_ref": f"manual:{found.pk}", "title": "Shipping", "url": None} in suggestion.sources
    prompt = [r for r in bot.fake.api_requests if r.path.endswith("/chat/completions")][-1].json()["messages"]
    assert "Tea ships from Yunnan within two days." in prompt[0]["content"]
    assert (prompt[-1]["role"], prompt[-1]["content"]) == ("user", "When does my tea ship from Yunnan?")
    # nothing was posted
    assert Message.objects.filter(chat_id=chat.pk).exclude(author_kind="client").count() == 0


def test_a_suggestion_the_pipeline_would_hand_over_is_empty(bot, widget):
    bot.fake.script(ok(pipeline.HANDOFF_MARKER))
    chat = conversation(widget, "Hello")
    assert assist.suggest_reply(widget=widget, chat=chat) == assist.Suggestion("", [])


@pytest.mark.parametrize("missing", ["assistant", "credential"])
def test_without_an_assistant_or_a_credential_the_ai_is_unavailable(bot, widget, missing):
    if missing == "assistant":
        bot.assistant.enabled = False
        bot.assistant.save()
    else:
        from apps.ai.models import Credential

        Credential.objects.filter(widget=widget).update(is_active=False)
    chat = conversation(widget, "Hello")
    with pytest.raises(errors.AiUnavailable):
        assist.suggest_reply(widget=widget, chat=chat)
    assert bot.fake.api_requests == []
