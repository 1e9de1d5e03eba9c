"""Agent assist (product-decisions.md "Agent assist and answers with sources"): what the AI does for
the people who take a chat over.

- The hand-over summary: when the AI operator hands a chat to people (`handoff.hand_to_people`) and
  the widget's `handover_summary` is on, a task sent once the hand-over commits asks the provider
  chain of that operator (the credential chain of its answers) to summarise the conversation in the
  widget's language, cuts the answer to five lines, takes out links other than the widget's own
  sites (`links.guard_links`) and posts it as the operator's private note (the
  console's notes: listed for operators, never shown to the visitor). The hand-over never waits for
  it; a provider failure writes no note and raises the `provider_failing` alert.
- The suggested reply (`POST /v1/chats/{id}/suggest-reply`, the console's "Suggest"): the pipeline of
  the chat's effective assistant (knowledge-base retrieval, prompt assembly, the transformation and
  the safety floors) on the chat's latest visitor message, answered with its sources and never posted.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction

from apps.agents.models import Agent
from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.core import events, provider_waits, queueing
from apps.core.models import Widget
from apps.core.ratelimit import Budget
from apps.platform import connections

from . import errors, handoff, links, pipeline, reply_safety, runtime, selectors
from .models import Assistant
from .providers import ChatMessage, ProviderError, complete, load_sdks
from .runtime import turns

logger = logging.getLogger(__name__)

SUMMARY_ORIGIN = "ai_handover_summary"
SUGGEST_BUDGET = Budget("ai_suggest_reply", 30, 60)


def conversation(chat: Chat) -> list[dict]:
    """The messages the visitor saw, as the AI answers from them (runtime.chat_history)."""
    return runtime.chat_history(chat_id=chat.pk, widget_id=chat.widget_id)


# --- the hand-over summary -----------------------------------------------------------------------------------


def on_awaiting_human(event: events.Event) -> None:
    """chat.awaiting_human (after commit): an AI operator's hand-over gets its summary when the
    widget's `handover_summary` is on."""
    chat, operator = event.obj("chat"), event.obj("operator")
    if chat is None or operator is None or operator.type != Agent.Type.AI:
        return
    if selectors.get_settings(chat.widget).handover_summary:
        send_summary(chat_id=chat.pk, operator_id=operator.pk)


def send_summary(*, chat_id: int, operator_id: int, countdown: float | None = None, since: float | None = None) -> bool:
    """Send the summary task (on the AI reply tasks' queue: it waits on the provider); False when the
    broker refused it (the hand-over stands; only its note is missing). `since` (time.time()) is when
    a summary waiting for one of its widget's slots was first sent."""
    options: dict = {"queue": runtime.limits.QUEUE} if runtime.limits.QUEUE else {}
    if countdown:
        options["countdown"] = countdown
    if since is not None:
        options["kwargs"] = {"since": since}
    try:
        queueing.task("apps.ai.tasks.summarise_handover").apply_async((chat_id, operator_id), **options)
    except Exception:  # noqa: BLE001 - broker down: the hand-over stands without its summary
        logger.warning("hand-over summary task could not be enqueued", extra={"chat_id": chat_id}, exc_info=True)
        return False
    return True


def summarise_handover(*, chat_id: int, operator_id: int, since: float | None = None) -> str:
    """Post the hand-over summary of a chat as `operator`'s private note. Returns what happened:
    `noted`, `disabled`, `unconfigured`, `empty`, `provider_failure`, `closed`, `gone`, `waiting` (the
    widget's slots are taken: the task comes back, runtime's `turns`) or `busy` (they stayed taken
    for as long as a summary is worth waiting for: none is written)."""
    # A contact whose erasure was accepted reads as missing: its conversation goes to no provider.
    chat = Chat.objects.select_related("widget").filter(pk=chat_id).live().first()
    operator = (
        Agent.objects.filter(pk=operator_id, widget_id=chat.widget_id, type=Agent.Type.AI).first() if chat else None
    )
    if chat is None or operator is None:
        return "gone"
    widget = chat.widget
    if not selectors.get_settings(widget).handover_summary:
        return "disabled"
    assistant = Assistant.objects.filter(widget=widget, pk=operator.ai_assistant_id).first()
    chain = selectors.resolve_chain(widget, operator=operator, assistant=assistant)
    if not chain:
        return "unconfigured"
    history = conversation(chat)
    if not history:
        return "empty"
    prompt = [
        ChatMessage(role=m.role, content=m.content)
        for m in pipeline.summary_messages(history=history, locale=handoff.widget_locale(widget))
    ]
    load_sdks(chain)
    turn = turns.take(widget.pk)
    if not turn.granted:
        return _summary_later(chat_id=chat_id, operator_id=operator_id, since=since)
    connections.lend_back_while_waiting()
    try:
        completion = complete(
            chain,
            prompt,
            temperature=assistant.temperature if assistant else None,
            # shorter than an answer's: a note for people must not hold the widget's slot as long
            deadline=time.monotonic() + runtime.limits.SUMMARY_DEADLINE_SECONDS,
            max_operations=runtime.limits.MAX_PROVIDER_OPERATIONS,
        )
    except ProviderError as exc:
        logger.warning("AI provider chain failed summarising chat %s: %s", chat.pk, exc.kind)
        runtime.alert_provider_failing(
            widget,
            exc,
            message="The AI provider and every declared backup failed; a hand-over summary was not written.",
        )
        return "provider_failure"
    finally:
        turns.give_back(turn)
    text = pipeline.cut_lines(completion.text)
    if reply_safety.check_reply(text, known_secrets=[c.api_key for c in chain], check_person=False) is not None:
        return "empty"  # nothing, or nothing people may read (a provider key in it)
    # SECURITY: the summary retells the visitor's words; a link they dictated goes nowhere.
    text = links.guard_links(text, widget=widget)
    return _post_note(widget=widget, chat=chat, operator=operator, text=text)


def _summary_later(*, chat_id: int, operator_id: int, since: float | None) -> str:
    """Every slot of the widget is taken: the summary task comes back a little later."""
    since = since if since is not None else time.time()
    waited = time.time() - since
    if waited > runtime.limits.LONGEST_WAIT.total_seconds():
        return "busy"
    if not runtime.runs_eagerly():  # no countdown runs eagerly: the summary is left out
        send_summary(chat_id=chat_id, operator_id=operator_id, countdown=turns.wait_seconds(waited), since=since)
    return "waiting"


@transaction.atomic
def _post_note(*, widget: Widget, chat: Chat, operator: Agent, text: str) -> str:
    try:
        chat = chat_services.lock_chat(widget=widget, chat=chat)
    except Chat.DoesNotExist:
        return "gone"  # the contact's erasure was accepted while the provider wrote
    if chat.status in (Chat.Status.EXPIRED, Chat.Status.SPAM):
        return "closed"  # a note would reopen a closed chat; a spam chat takes none
    chat_services.post_agent_message(
        widget=widget,
        chat=chat,
        agent=operator,
        data=chat_services.MessageInput(body=text, origin=SUMMARY_ORIGIN, visibility=Message.Visibility.NOTE),
        source=handoff.SOURCE,
    )
    return "noted"


# --- the suggested reply -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Suggestion:
    text: str
    sources: list[dict]


def suggest_reply(*, widget: Widget, chat: Chat) -> Suggestion:
    """A reply for people to the chat's latest visitor message, by the pipeline of the widget's
    effective assistant (its knowledge included), posted nowhere. 409 `ai_unavailable` without an
    enabled assistant or a credential; 429 past SUGGEST_BUDGET per widget; 502 `provider_failure`
    (and the `provider_failing` alert) when the chain fails. An answer the pipeline would turn into a
    hand-over (the model asked for a person, a safety floor) suggests nothing: `text` is empty."""
    if chat.widget_id != widget.pk:
        raise AssertionError("chat must belong to the widget")
    assistant = selectors.effective_assistant(widget)
    if assistant is None:
        raise errors.AiUnavailable("The widget has no enabled assistant.")
    chain = selectors.resolve_chain(widget, operator=runtime.active_operator(widget, assistant), assistant=assistant)
    if not chain:
        raise errors.AiUnavailable("No active provider credential resolves for the widget's assistant.")
    SUGGEST_BUDGET.check(widget.pk, detail=f"At most {SUGGEST_BUDGET.limit} suggested replies per minute per widget.")
    history = conversation(chat)
    last = next((i for i in range(len(history) - 1, -1, -1) if history[i]["role"] == "user"), None)
    if last is None:
        return Suggestion("", [])  # nothing of the visitor's to answer
    question, history = history[last]["content"], history[:last]
    ai_settings = selectors.get_settings(widget)
    with provider_waits.wait(widget.pk, seconds=settings.AI_REQUEST_PROVIDER_DEADLINE_SECONDS):
        rag, prompt = runtime.grounded_prompt(
            widget=widget, assistant=assistant, ai_settings=ai_settings, question=question, history=history
        )
        load_sdks(chain)
        connections.lend_back_while_waiting()
        try:
            completion = complete(
                chain,
                prompt,
                temperature=assistant.temperature,
                deadline=provider_waits.deadline(),
                max_operations=runtime.limits.MAX_PROVIDER_OPERATIONS,
            )
        except ProviderError as exc:
            runtime.alert_provider_failing(
                widget, exc, message="The AI provider and every declared backup failed; a reply was not suggested."
            )
            raise errors.ProviderFailure(
                "The provider and every declared backup failed.",
                kind=exc.kind,
                provider_status=exc.status,
                provider_http_operations=len(exc.attempts or ()),
            ) from None
    locale = handoff.visitor_locale(widget=widget, chat=chat, question=question)
    options = {
        "locale": locale,
        "operators_state": "online",  # the person asking is there
        "presence_context_enabled": ai_settings.presence_context_enabled,
        "overrides": ai_settings.phrases or {},
    }
    outcome = pipeline.transform(
        question=question, answer=completion.text, triggers=list(assistant.escalation_triggers), **options
    )
    outcome = pipeline.check_floors(
        outcome,
        question=question,
        known_secrets=[config.api_key for config in chain],
        system_prompt=assistant.system_prompt,
        knowledge=rag.chunks,
        **options,
    )
    if outcome.escalation["escalate"]:
        return Suggestion("", [])
    # SECURITY: an operator may send the suggestion as it is: only links to the widget's own sites
    # and the sources it was built on stay.
    return Suggestion(links.guard_links(outcome.answer, widget=widget, sources=rag.sources), rag.sources)
