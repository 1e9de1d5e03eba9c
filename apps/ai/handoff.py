"""Who answers a chat, machine or person, and the hand-over from a machine to people.

A machine is the built-in AI operator or an external (webhook) operator. Both the AI reply worker
(apps.ai.runtime) and the external operators' dispatch and reply callback (apps.external) ask
`machine_may_answer` before answering a visitor and call `hand_to_people` to escalate, so the two
follow one rule:

- a machine may answer a chat no person handles;
- a person who accepted (or handles) the chat holds it while they answer; when they stay silent
  `takeover_timeout_sec` after the visitor's last message, a machine may answer again (the AI's
  answer then makes `handling` `human_to_ai`);
- after a hand-over the chat waits for a person (`Chat.awaiting_human_since`): no machine answers
  it until a person does (`handling` then becomes `ai_to_human`).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.db import transaction

from apps.agents import selectors as agent_selectors
from apps.agents.models import Agent
from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.core.models import Widget
from apps.widget import selectors as widget_selectors

from . import phrases, pipeline, selectors

logger = logging.getLogger(__name__)

HANDOFF_ORIGIN = "ai_handoff"
OUTSIDE_HOURS_ORIGIN = "ai_outside_hours"
SOURCE = "ai"


# --- reads --------------------------------------------------------------------------------------------


def person_handling(chat: Chat) -> Agent | None:
    """The person (a human agent) who handles the chat now, or None (nobody, or a machine)."""
    if chat.handled_by_id is None or chat.handled_by_type != Chat.OperatorType.HUMAN:
        return None
    agent = chat.handled_by
    return agent if agent is not None and agent.type == Agent.Type.HUMAN else None


def last_client_message_at(chat: Chat) -> datetime | None:
    return (
        Message.objects.filter(chat=chat, widget_id=chat.widget_id, author_kind=Message.Author.CLIENT)
        .order_by("-created_at", "-id")
        .values_list("created_at", flat=True)
        .first()
    )


def person_answered_since(chat: Chat, since: datetime) -> bool:
    """A person wrote a visitor-visible message into the chat at or after `since`."""
    return Message.objects.filter(
        chat=chat,
        widget_id=chat.widget_id,
        author_kind=Message.Author.AGENT,
        agent__type=Agent.Type.HUMAN,
        visibility=Message.Visibility.PUBLIC,
        created_at__gte=since,
    ).exists()


def takeover_due_at(chat: Chat, *, timeout_sec: int) -> datetime | None:
    """When a silent person's hold on the chat ends: the visitor's last message plus the timeout,
    or None when nothing is pending (no visitor message, or the person answered it)."""
    last = last_client_message_at(chat)
    if last is None or person_answered_since(chat, last):
        return None
    return last + timedelta(seconds=timeout_sec)


def machine_may_answer(*, chat: Chat, now: datetime) -> bool:
    """Whether a machine (the AI operator, an external operator) may answer the chat at `now`.

    False while the chat waits for a person after a hand-over, and while a person handles it and
    either answered the visitor's last message or has been silent less than `takeover_timeout_sec`
    since it. Reads only; callers that then write lock the chat and ask again."""
    if chat.status == Chat.Status.SPAM or chat.awaiting_human_since is not None:
        return False
    if person_handling(chat) is None:
        return True
    due = takeover_due_at(chat, timeout_sec=selectors.get_settings(chat.widget).takeover_timeout_sec)
    return due is not None and now >= due


def operators_state(widget: Widget) -> str:
    """`online` when an active human agent of the widget is connected now, `offline` when none is
    or the widget is outside its business hours, `unknown` when live presence cannot be read."""
    if not widget_selectors.business_hours_state(widget).open:
        return "offline"  # outside business hours nobody answers, whoever is connected
    try:
        online = agent_selectors.online_agent_ids(widget)
        if not online:
            return "offline"
        humans = Agent.objects.filter(
            widget=widget, pk__in=online, type=Agent.Type.HUMAN, status=Agent.Status.ACTIVE
        ).exists()
    except Exception:  # noqa: BLE001 - presence unreadable: the unknown outcome applies
        logger.warning("presence of widget %s could not be read", widget.pk, exc_info=True)
        return "unknown"
    return "online" if humans else "offline"


def widget_locale(widget: Widget) -> str:
    language = widget_selectors.language_payload(widget)["effective_language"]
    return language if language in phrases.LANGUAGES else "en"


def visitor_locale(*, widget: Widget, chat: Chat, question: str = "") -> str:
    """The visitor's language among the seven: the script of their message when it names one
    (Cyrillic, Greek, Arabic, CJK), else the contact's locale, else what the Latin letters suggest,
    else the widget's language."""
    detected = pipeline.detect_language(question) if question else None
    if detected in ("ru", "el", "ar", "zh"):
        return detected
    contact_locale = (chat.contact.locale or "").lower().replace("_", "-").split("-")[0]
    if contact_locale in phrases.LANGUAGES:
        return contact_locale
    if detected in phrases.LANGUAGES:
        return detected
    return widget_locale(widget)


# --- the hand-over --------------------------------------------------------------------------------------


def post_as_operator(
    *,
    widget: Widget,
    chat: Chat,
    operator: Agent,
    text: str,
    origin: str,
    shadow: bool | None = None,
    sources: list[dict] | None = None,
) -> Message:
    """A machine's message into the chat: visible to the visitor, or a private note in shadow mode
    (the built-in AI operator only: shadow mode is an AI setting; `shadow` is the caller's reading
    of it, else it is read here). A visible message of the AI operator accepts the chat
    (`record_answer`); a note never does. `sources` ([{title, url}]) are kept with the message."""
    if shadow is None:
        shadow = selectors.get_settings(widget).shadow_mode
    shadow = operator.type == Agent.Type.AI and shadow
    visibility = Message.Visibility.NOTE if shadow else Message.Visibility.PUBLIC
    return chat_services.post_agent_message(
        widget=widget,
        chat=chat,
        agent=operator,
        data=chat_services.MessageInput(body=text, origin=origin, visibility=visibility, sources=sources),
        source=SOURCE,
    )


@transaction.atomic
def hand_to_people(*, widget: Widget, chat: Chat, operator: Agent, reason: str, question: str = "") -> Message | None:
    """Hand the chat from a machine to people: the hand-over phrase in the visitor's language chosen
    by live presence (`handoff_to_human` / `handover_offline` / `handover_unknown`, the widget's
    `offline_outcome_mode` and phrase overrides honoured) is posted as `operator`'s message (a
    private note in shadow mode), and the chat waits for a person (chat.awaiting_human). Outside the
    widget's business hours in `ai_only` mode nobody is handed the chat: the `outside_hours` phrase
    is posted instead and the chat stays with the machine.

    `question` is the visitor's message that led here (its language chooses the phrase). Returns the
    phrase message, or None when the chat already waits for a person (nothing posted twice) or is
    spam. Locks the chat; emits message.created (and chat.accepted on a first visible answer), then
    chat.awaiting_human. When the AI operator hands over and `handover_summary` is on, the summary
    task (apps.ai.assist) is sent after the commit."""
    if operator.widget_id != widget.pk:
        raise AssertionError("operator must belong to the widget")
    chat = chat_services.lock_chat(widget=widget, chat=chat)
    if chat.awaiting_human_since is not None or chat.status == Chat.Status.SPAM:
        return None
    ai_settings = selectors.get_settings(widget)
    hours = widget_selectors.business_hours_state(widget)
    if not hours.open and hours.mode == "ai_only":
        # `ai_only`: nobody is handed the chat while closed; the visitor learns when people are back.
        locale = visitor_locale(widget=widget, chat=chat, question=question)
        text = phrases.with_opens_at(
            phrases.text_of(ai_settings.phrases or {}, "outside_hours", locale), hours.opens_at_short()
        )
        logger.info("chat %s not handed to people outside business hours (%s)", chat.pk, reason)
        return post_as_operator(widget=widget, chat=chat, operator=operator, text=text, origin=OUTSIDE_HOURS_ORIGIN)
    text, outcome, _suppressed = pipeline.handover_choice(
        ai_settings.phrases or {},
        visitor_locale(widget=widget, chat=chat, question=question),
        operators_state(widget),
        ai_settings.presence_context_enabled,
    )
    message = post_as_operator(widget=widget, chat=chat, operator=operator, text=text, origin=HANDOFF_ORIGIN)
    chat_services.await_human(widget=widget, chat=chat, reason=reason, operator=operator)
    logger.info("chat %s handed to people (%s, %s)", chat.pk, reason, outcome)
    return message
