"""The task: answer one visitor message (the path in the package text), post the answer or hand
the chat to people, and the prompt grounded on the knowledge base."""

from __future__ import annotations

import logging
import time
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.agents.models import Agent
from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.core.models import Widget
from apps.platform import connections, metrics

from .. import config, handoff, pipeline, reply_safety, retrieval, routing, selectors
from ..models import AiSettings, Alert, Assistant, ReplyClaim
from ..providers import ChatMessage, ProviderError, complete
from . import enqueueing, limits, turns
from .claims import _claim, _hold, _let_go
from .reads import _content, visible_history

logger = logging.getLogger(__name__)


def answer(*, message_id: int) -> str:
    """Answer one visitor message (see the package text). Returns what happened: `answered`,
    `handed_off`, `external`, `superseded`, `closed`, `before_ai`, `dropped`, `person_handles`, `awaiting_human`,
    `disabled`, `unconfigured`, `claimed_elsewhere`, `waiting` (the widget's slots are taken: the task
    comes back, `turns`) or `not_a_visitor_message`. Safe to run twice
    and concurrently for one message: it is answered at most once."""
    message = selectors.answerable_message(message_id)
    if message is None or message.author_kind != Message.Author.CLIENT:
        return "not_a_visitor_message"
    chat, widget = message.chat, message.chat.widget
    if message.newer_exists:
        return "superseded"
    if chat.status in (Chat.Status.EXPIRED, Chat.Status.SPAM):
        # closed since the message came (a takeover timer or a re-drive that outlived the chat):
        # a machine never reopens a chat
        return "closed"
    now = timezone.now()
    if not handoff.machine_may_answer(chat=chat, now=now):
        if chat.awaiting_human_since is not None:
            return "awaiting_human"
        _schedule_takeover(chat, message, now)
        return "person_handles"
    if routing.dispatch_to_external(chat, message):
        return "external"
    configured = config.answer_config(widget, version=message.ai_config_version)
    ai_settings = configured.settings
    if not ai_settings.enabled:
        return "disabled"
    if ai_settings.enabled_at is not None and message.created_at < ai_settings.enabled_at:
        return "before_ai"
    assistant, operator, chain = configured.assistant, configured.operator, configured.chain
    if not chain:
        return "unconfigured"
    # A hand-over the visitor's message decides asks no provider, so it waits for no slot either.
    at_once = handover_before_provider(assistant, _content(message))
    turn = None
    if at_once is None:
        turn = turns.take(widget.pk)
        if not turn.granted:
            waited = now - message.created_at
            if waited <= limits.LONGEST_WAIT:
                return _wait_for_a_slot(message, waited.total_seconds())
            # the widget's AI was busy for as long as an answer is worth waiting for: people take it
            at_once = (limits.AI_BUSY, limits.AI_BUSY)
    try:
        return _answer_claimed(
            widget=widget,
            chat=chat,
            message=message,
            ai_settings=ai_settings,
            assistant=assistant,
            operator=operator,
            chain=chain,
            at_once=at_once,
        )
    finally:
        turns.give_back(turn)


def _wait_for_a_slot(message: Message, waited: float) -> str:
    """Every slot of the widget is taken: the task comes back a little later (`turns`)."""
    if runs_eagerly():
        return "waiting"  # no countdown runs eagerly: the beat job `redrive` sends it again
    seconds = turns.wait_seconds(waited)
    turns.mark_waiting(message.pk, seconds)
    if not enqueueing.enqueue(message.pk, countdown=seconds):
        turns.clear_waiting(message.pk)  # the beat job `redrive` sends it again
    return "waiting"


def handover_before_provider(assistant: Assistant, question: str) -> tuple[str, str] | None:
    """The hand-over the visitor's message decides before any provider is asked, as (reason, detail):
    an escalation trigger of the assistant hands the chat to people at once, and so does a visitor
    asking for a person (a safety floor). None when the provider is asked."""
    if pipeline.matches_trigger(list(assistant.escalation_triggers), question) is not None:
        return "trigger", "escalation_outcome"
    if reply_safety.visitor_asks_for_person(question):
        reason = reply_safety.reason(reply_safety.PERSON_REQUESTED)
        return reason, reason
    return None


def _answer_claimed(
    *,
    widget: Widget,
    chat: Chat,
    message: Message,
    ai_settings: AiSettings,
    assistant: Assistant,
    operator: Agent,
    chain: list,
    at_once: tuple[str, str] | None,
) -> str:
    """Claim the message, then hand over at once (`at_once`: reason, detail) or ask the provider."""
    claim = _claim(widget=widget, chat=chat, message=message)
    if claim is None:
        return "claimed_elsewhere"
    _hold(claim)
    started = time.monotonic()
    if claim.attempts > limits.MAX_CLAIM_ATTEMPTS:
        at_once = (limits.WORKER_LOST, limits.WORKER_LOST)
    try:
        if at_once is not None:
            outcome = _finish(
                widget=widget,
                chat=chat,
                message=message,
                claim=claim,
                operator=operator,
                handoff_reason=at_once[0],
                detail=at_once[1],
                provider_ms=0.0,
            )
        else:
            outcome = _run(
                widget=widget,
                chat=chat,
                message=message,
                claim=claim,
                ai_settings=ai_settings,
                assistant=assistant,
                operator=operator,
                chain=chain,
            )
    except BaseException:
        # Free the claim for the task's retry (or redelivery), unless the answer was already posted.
        ReplyClaim.objects.filter(pk=claim.pk, token=claim.token, state=ReplyClaim.State.WORKING).delete()
        raise
    finally:
        _let_go(claim)
    metrics.observe_ai_answer(outcome=outcome, seconds=time.monotonic() - started)
    return outcome


def runs_eagerly() -> bool:
    """Celery runs tasks in place (the tests): a countdown would not wait."""
    from celery import current_app

    return bool(current_app.conf.task_always_eager)


def _schedule_takeover(chat: Chat, message: Message, now: datetime) -> None:
    """A person holds the chat: come back when their silence would let the AI take over."""
    if handoff.person_handling(chat) is None or runs_eagerly():
        return
    due = handoff.takeover_due_at(chat, timeout_sec=selectors.get_settings(chat.widget).takeover_timeout_sec)
    if due is None:
        return
    limit = float(getattr(settings, "CELERY_TASK_MAX_COUNTDOWN", 3600)) - 60
    enqueueing.enqueue(message.pk, countdown=min(max((due - now).total_seconds(), 0.0) + 1.0, limit))


def _typing(widget: Widget, chat: Chat, state: str) -> None:
    try:
        chat_services.note_typing(widget=widget, chat=chat, state=state, by="agent")
    except Exception:  # noqa: BLE001 - the indicator is best effort (a chat turned spam refuses it)
        logger.info("AI typing indicator not sent for chat %s", chat.pk)


def _run(
    *,
    widget: Widget,
    chat: Chat,
    message: Message,
    claim: ReplyClaim,
    ai_settings: AiSettings,
    assistant: Assistant,
    operator: Agent,
    chain: list,
) -> str:
    question = _content(message)
    operators_state = handoff.operators_state(widget)
    rag, prompt = grounded_prompt(
        widget=widget,
        assistant=assistant,
        ai_settings=ai_settings,
        question=question,
        history=visible_history(message),
        operators_state=operators_state if ai_settings.presence_context_enabled else None,
    )
    locale = handoff.visitor_locale(widget=widget, chat=chat, question=question)
    _typing(widget, chat, "start")
    connections.lend_back_while_waiting()
    started = time.monotonic()
    try:
        completion = complete(
            chain,
            prompt,
            temperature=assistant.temperature,
            deadline=started + limits.PROVIDER_DEADLINE_SECONDS,
            max_operations=limits.MAX_PROVIDER_OPERATIONS,
        )
    except ProviderError as exc:
        logger.warning("AI provider chain failed for chat %s: %s", chat.pk, exc.kind)
        alert_provider_failing(widget, exc)
        return _finish(
            widget=widget,
            chat=chat,
            message=message,
            claim=claim,
            operator=operator,
            handoff_reason="provider_failure",
            detail=exc.kind,
            provider_ms=(time.monotonic() - started) * 1000,
        )
    outcome = pipeline.transform(
        question=question,
        answer=completion.text,
        triggers=list(assistant.escalation_triggers),
        locale=locale,
        operators_state=operators_state,
        presence_context_enabled=ai_settings.presence_context_enabled,
        overrides=ai_settings.phrases or {},
    )
    checked = pipeline.check_floors(
        outcome,
        question=question,
        known_secrets=[config.api_key for config in chain],
        system_prompt=assistant.system_prompt,
        knowledge=rag.chunks,
        locale=locale,
        operators_state=operators_state,
        presence_context_enabled=ai_settings.presence_context_enabled,
        overrides=ai_settings.phrases or {},
    )
    escalation = checked.escalation
    handoff_reason = escalation["reason"] if escalation["escalate"] else None
    # The claim's detail: the transformation, or the floor that stopped the answer.
    detail = handoff_reason if checked is not outcome else outcome.transformation
    return _finish(
        widget=widget,
        chat=chat,
        message=message,
        claim=claim,
        operator=operator,
        text=outcome.answer,
        sources=_cited(assistant, rag, outcome),
        handoff_reason=handoff_reason,
        detail=detail,
        provider_ms=completion.latency_ms,
    )


@transaction.atomic
def _finish(
    *,
    widget: Widget,
    chat: Chat,
    message: Message,
    claim: ReplyClaim,
    operator: Agent,
    text: str = "",
    sources: list[dict] | None = None,
    handoff_reason: str | None,
    detail: str,
    provider_ms: float,
) -> str:
    """Post the answer (or hand over) under the chat's lock, if the claim is still this worker's and
    nothing that arrived during generation makes the answer stale. A chat whose contact's erasure was
    accepted meanwhile takes nothing: the answer is dropped."""
    try:
        chat = chat_services.lock_chat(widget=widget, chat=chat)
    except Chat.DoesNotExist:
        ReplyClaim.objects.filter(pk=claim.pk, token=claim.token, state=ReplyClaim.State.WORKING).update(
            state=ReplyClaim.State.DROPPED, detail="erased", provider_ms=provider_ms, finished_at=timezone.now()
        )
        return str(ReplyClaim.State.DROPPED)
    # One read under the chat's lock: the claim (locked), whether a newer visitor message arrived,
    # and the AI switch and shadow mode again (they may have changed while the provider worked).
    held = selectors.held_claim(claim, message)
    if held is None or held.state != ReplyClaim.State.WORKING:
        return "claimed_elsewhere"
    reply = None
    if held.newer_exists:
        state = ReplyClaim.State.SUPERSEDED
    elif not held.ai_enabled or not handoff.machine_may_answer(chat=chat, now=timezone.now()):
        state = ReplyClaim.State.DROPPED
    elif handoff_reason is not None:
        reply = handoff.hand_to_people(
            widget=widget, chat=chat, operator=operator, reason=handoff_reason, question=_content(message)
        )
        state = ReplyClaim.State.HANDED_OFF
    else:
        reply = handoff.post_as_operator(
            widget=widget,
            chat=chat,
            operator=operator,
            text=text,
            origin=limits.REPLY_ORIGIN,
            shadow=bool(held.ai_shadow),
            sources=sources,
        )
        state = ReplyClaim.State.ANSWERED
    if reply is None:
        _typing(widget, chat, "stop")
    held.state, held.reply, held.detail = state, reply, detail[:64]
    held.provider_ms, held.finished_at = provider_ms, timezone.now()
    held.save(update_fields=["state", "reply", "detail", "provider_ms", "finished_at"])
    return str(state)


def grounded_prompt(
    *,
    widget: Widget,
    assistant: Assistant,
    ai_settings: AiSettings,
    question: str,
    history: list[dict],
    operators_state: str | None = None,
) -> tuple[retrieval.Retrieval, list[ChatMessage]]:
    """The knowledge retrieved for `question` (when the widget's or the assistant's `rag_enabled`)
    and the prompt built on it: what an answer and a suggested reply send to the provider."""
    rag = retrieval.retrieve(
        widget=widget,
        assistant=assistant,
        question=question,
        enabled=ai_settings.rag_enabled or assistant.rag_enabled,
    )
    prompt = [
        ChatMessage(role=m.role, content=m.content)
        for m in pipeline.assemble_messages(
            system_prompt=assistant.system_prompt,
            persona=assistant.persona,
            knowledge=rag.chunks,
            history=history,
            question=question,
            operators_state=operators_state,
        )
    ]
    return rag, prompt


# The transformations whose text is the model's own answer (a social reply is a stock phrase).
_MODEL_ANSWERS = ("answer", "answer_only_recovery")
# What an answer cites: documents (uploads, crawled pages), not the rules written by hand.
_CITED_KINDS = ("upload", "crawl")


def _cited(assistant: Assistant, rag: retrieval.Retrieval, outcome: pipeline.Outcome) -> list[dict] | None:
    """The sources an answer carries: the documents of the knowledge it was given, when its assistant
    cites them and the visitor is shown the model's answer (a hand-over or a stock phrase cites none)."""
    if not assistant.cite_sources or outcome.transformation not in _MODEL_ANSWERS:
        return None
    cited = [
        {"title": source["title"], "url": source["url"]}
        for source in rag.sources
        if source["source_ref"].partition(":")[0] in _CITED_KINDS
    ]
    return cited or None


def alert_provider_failing(
    widget: Widget,
    exc: ProviderError,
    *,
    message: str = "The AI provider and every declared backup failed; the chat was handed to people.",
) -> None:
    """One outstanding `provider_failing` alert an hour at most, so a dead provider does not flood.
    Every provider call of the AI (answers, hand-over summaries, suggested replies) raises it."""
    recent = timezone.now() - limits.ALERT_QUIET
    if Alert.objects.filter(
        widget=widget, kind=limits.ALERT_KIND, acknowledged_at__isnull=True, created_at__gte=recent
    ).exists():
        return
    Alert.objects.create(
        widget=widget,
        kind=limits.ALERT_KIND,
        message=message,
        details={"kind": exc.kind, "status": exc.status, "exhausted": exc.exhausted},
    )
