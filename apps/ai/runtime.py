"""The AI operator at work (product-decisions.md "The AI operator at work"): each visitor message of a
chat that no person handles is answered in a worker task.

The path of one visitor message (`answer`, run by `tasks.answer_visitor_message`):

1. the visitor's `message.created` commits; the on-commit handler `message_created` enqueues the
   task (ids in); a task the broker refused, or whose worker died or stopped while it held the
   claim (step 5), is sent again by the beat job `redrive`;
2. a newer visitor message in the chat supersedes this one (its own task answers the newest, with
   this one in the history);
3. a machine may answer (`handoff.machine_may_answer`): else, when a person holds the chat, the
   task comes back when their `takeover_timeout_sec` runs out (`human_to_ai` if they stayed silent);
4. the widget's active external operators take the message when it has one
   (`routing.dispatch_to_external`), whatever the AI switch says;
5. with the switch on, an effective assistant, its active AI operator and a resolvable credential,
   the message is claimed (`ReplyClaim`, a unique insert: two workers, or a redelivered task, answer
   once), the visitor sees the AI typing, and the provider chain (backups included) is asked with
   the system prompt, persona, retrieved knowledge (`rag_enabled`), presence context
   (`presence_context_enabled`) and the visible history;
6. `pipeline.transform` (the classifier the detached test runs too) decides, then the platform
   safety floors (`pipeline.check_floors`, which the detached test runs too: a leaked secret, the
   system prompt repeated, a reply over the message limit; a visitor asking for a person is handed
   over before the provider is asked);
   under the chat's lock,
   and only while the claim is still this worker's, the answer is posted as the AI operator's message
   (a private note in shadow mode) or the chat is handed to people (`handoff.hand_to_people`). A
   newer visitor message or a person's answer that arrived meanwhile drops the answer; a provider
   failure or timeout hands the chat to people instead of leaving the visitor unanswered.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Exists, F, OuterRef, Q, Subquery
from django.utils import timezone

from apps.agents.models import Agent
from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.core import events, metrics, queueing
from apps.core.models import Widget

from . import config, floors, handoff, pipeline, retrieval, routing, selectors
from .models import AiSettings, Alert, Assistant, ReplyClaim
from .providers import ChatMessage, ProviderError, complete

logger = logging.getLogger(__name__)

REPLY_ORIGIN = "ai_reply"
PROVIDER_DEADLINE_SECONDS = 45.0
MAX_PROVIDER_OPERATIONS = 10
# A `working` claim older than this belongs to a worker that died: the provider deadline bounds a
# live one, so another worker may take it over (the beat job `redrive` sends its task again).
CLAIM_LEASE = timedelta(seconds=PROVIDER_DEADLINE_SECONDS + 30)
# A message whose claim was taken over this many times killed every worker that tried it: the next
# try hands the chat to people instead of asking the provider again.
MAX_CLAIM_ATTEMPTS = 3
WORKER_LOST = "worker_lost"
HISTORY_MESSAGES = 20
HISTORY_CHARACTERS = 12000
ALERT_KIND = "provider_failing"
ALERT_QUIET = timedelta(hours=1)

# The queue of the AI reply tasks: the Procfile's `ai` worker (a thread pool: the tasks mostly wait on
# the provider, up to its deadline) consumes it, so a slow provider never holds the main worker's
# slots (webhook deliveries, the outbox fan-out). Tests with a real worker use a queue of their own.
QUEUE: str | None = "ai"


# --- enqueueing --------------------------------------------------------------------------------------


def message_created(event: events.Event) -> None:
    """On-commit handler of message.created: a visitor's message gets its worker task."""
    message = event.obj("message")
    if message is None or message.author_kind != Message.Author.CLIENT:
        return
    enqueue(message.pk)


def enqueue(message_id: int, *, countdown: float | None = None) -> bool:
    """Send the message's task; False when the broker refused it (the beat job `redrive` sends it
    again later: the message is committed, so its answer is only late, never lost)."""
    options: dict = {}
    if QUEUE:
        options["queue"] = QUEUE
    if countdown:
        options["countdown"] = countdown
    try:
        queueing.task("apps.ai.tasks.answer_visitor_message").apply_async((message_id,), **options)
    except Exception:  # noqa: BLE001 - broker down: `redrive` sends it again
        logger.warning("AI reply task could not be enqueued", extra={"message_id": message_id}, exc_info=True)
        return False
    return True


# --- re-drive: a visitor message whose task was lost -----------------------------------------------------

# A visitor message older than this, with no live claim (none, or a `working` one past its lease) and
# no newer visitor message, in a chat the AI would answer, lost its task (the broker refused it, a
# worker died or stopped holding its claim): the beat job sends it again.
REDRIVE_AFTER = timedelta(seconds=30)
# ... unless it is older than this (an answer that late is not an answer any more).
REDRIVE_WINDOW = timedelta(minutes=15)
REDRIVE_LIMIT = 500
_REDRIVE_KEY = "ai:redrive:{}"


def lost_messages(*, now: datetime | None = None, limit: int = REDRIVE_LIMIT) -> list[int]:
    """Ids of visitor messages in [now - REDRIVE_WINDOW, now - REDRIVE_AFTER] of widgets with AI on,
    in chats no person holds and that do not wait for one, with no newer visitor message and no live
    ReplyClaim: their answer task never ran to a claim, or the worker holding the claim died (the
    claim is `working` past CLAIM_LEASE) or gave it back when it stopped. Oldest first. One query
    (the message index `widget, -created_at` per AI widget)."""
    now = now or timezone.now()
    live_claims = ReplyClaim.objects.filter(message_id=OuterRef("pk")).exclude(
        state=ReplyClaim.State.WORKING, claimed_at__lt=now - CLAIM_LEASE
    )
    widget_ids = list(AiSettings.objects.filter(enabled=True).values_list("widget_id", flat=True))
    if not widget_ids:
        return []
    # A message written before its widget's AI went on is the people's to answer.
    since_switched_on = Q(widget__ai_settings__enabled_at__isnull=True) | Q(
        created_at__gte=F("widget__ai_settings__enabled_at")
    )
    rows = (
        Message.objects.filter(
            since_switched_on,
            widget_id__in=widget_ids,
            author_kind=Message.Author.CLIENT,
            created_at__gte=now - REDRIVE_WINDOW,
            created_at__lte=now - REDRIVE_AFTER,
            chat__awaiting_human_since__isnull=True,
        )
        .exclude(chat__status__in=[Chat.Status.SPAM, Chat.Status.EXPIRED])
        .exclude(chat__handled_by_type=Chat.OperatorType.HUMAN)
        .annotate(
            claimed=Exists(live_claims),
            newer_exists=Exists(_newer_visitor_messages(OuterRef("chat_id"), OuterRef("widget_id"), OuterRef("pk"))),
        )
        .filter(claimed=False, newer_exists=False)
        .order_by("created_at", "id")
        .values_list("pk", flat=True)
    )
    return list(rows[:limit])


def redrive(*, now: datetime | None = None) -> int:
    """The beat job: send the task of every lost visitor message once per claim attempt (a cache
    mark per message and attempt for the window: a lost task once, then once more each time a
    worker holding its claim died or stopped; a send the broker refuses again clears its mark, so
    the next run retries). A task sent twice answers once all the same (the claim). Returns how many
    were sent."""
    from django.core.cache import cache

    sent = 0
    lost = lost_messages(now=now)
    attempts = dict(ReplyClaim.objects.filter(message_id__in=lost).values_list("message_id", "attempts"))
    for message_id in lost:
        key = _REDRIVE_KEY.format(f"{message_id}:{attempts.get(message_id, 0)}")
        if not cache.add(key, 1, timeout=int(REDRIVE_WINDOW.total_seconds()) * 2):
            continue
        if enqueue(message_id):
            sent += 1
        else:
            cache.delete(key)
    if sent:
        logger.info("AI reply tasks re-driven: %s", sent)
    return sent


def _eager() -> bool:
    from celery import current_app

    return bool(current_app.conf.task_always_eager)


# --- reads ---------------------------------------------------------------------------------------------


def _newer_visitor_messages(chat_id, widget_id, message_id):
    return Message.objects.filter(
        chat_id=chat_id, widget_id=widget_id, author_kind=Message.Author.CLIENT, id__gt=message_id
    )


def newer_visitor_message_exists(message: Message) -> bool:
    return _newer_visitor_messages(message.chat_id, message.widget_id, message.pk).exists()


def active_operator(widget: Widget, assistant: Assistant) -> Agent | None:
    """The AI operator that answers for `assistant`: its oldest active one."""
    return selectors.operators_of(widget, assistant).filter(status=Agent.Status.ACTIVE).order_by("id").first()


def _content(message: Message) -> str:
    if message.type == Message.Type.TEXT or message.body:
        return message.body
    return f"[{message.type}]"


def visible_history(message: Message) -> list[dict]:
    """The messages the visitor saw before `message`: see chat_history."""
    return chat_history(chat_id=message.chat_id, widget_id=message.widget_id, before_id=message.pk)


def chat_history(*, chat_id: int, widget_id: int, before_id: int | None = None) -> list[dict]:
    """The messages the visitor saw (before message `before_id` when given): the newest
    HISTORY_MESSAGES, at most HISTORY_CHARACTERS in all, oldest first, as {role, content}. What the AI
    answers, suggests and summarises from."""
    rows = Message.objects.filter(
        chat_id=chat_id,
        widget_id=widget_id,
        visibility=Message.Visibility.PUBLIC,
        author_kind__in=[Message.Author.CLIENT, Message.Author.AGENT, Message.Author.AI],
    )
    if before_id is not None:
        rows = rows.filter(id__lt=before_id)
    history, total = [], 0
    for row in rows.order_by("-created_at", "-id").only("type", "body", "author_kind")[:HISTORY_MESSAGES]:
        content = _content(row)
        if not content.strip():
            continue
        total += len(content)
        if total > HISTORY_CHARACTERS:
            break
        history.append(
            {"role": "user" if row.author_kind == Message.Author.CLIENT else "assistant", "content": content}
        )
    history.reverse()
    return history


# --- the task --------------------------------------------------------------------------------------------


def answer(*, message_id: int) -> str:
    """Answer one visitor message (see the module text). Returns what happened: `answered`,
    `handed_off`, `external`, `superseded`, `closed`, `before_ai`, `dropped`, `person_handles`, `awaiting_human`,
    `disabled`, `unconfigured`, `claimed_elsewhere` or `not_a_visitor_message`. Safe to run twice
    and concurrently for one message: it is answered at most once."""
    message = (
        Message.objects.select_related("chat", "chat__widget", "chat__contact", "chat__handled_by")
        .annotate(
            newer_exists=Exists(_newer_visitor_messages(OuterRef("chat_id"), OuterRef("widget_id"), OuterRef("pk"))),
            # The AI configuration's version: the configuration itself comes from the process's copy.
            ai_config_version=Subquery(
                AiSettings.objects.filter(widget_id=OuterRef("widget_id")).values("config_version")[:1]
            ),
        )
        .filter(pk=message_id)
        .first()
    )
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
    claim = _claim(widget=widget, chat=chat, message=message)
    if claim is None:
        return "claimed_elsewhere"
    _hold(claim)
    started = time.monotonic()
    try:
        if claim.attempts > MAX_CLAIM_ATTEMPTS:
            outcome = _finish(
                widget=widget,
                chat=chat,
                message=message,
                claim=claim,
                operator=operator,
                handoff_reason=WORKER_LOST,
                detail=WORKER_LOST,
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


# --- the claims a process holds, given back when its worker stops -----------------------------------------

_held_lock = threading.Lock()
_held: dict[int, str] = {}  # claim id -> token, while this process's task works on it


def _hold(claim: ReplyClaim) -> None:
    with _held_lock:
        _held[claim.pk] = claim.token


def _let_go(claim: ReplyClaim) -> None:
    with _held_lock:
        _held.pop(claim.pk, None)


def release_claims() -> int:
    """Give back the claims this process's tasks hold (its worker is stopping): each still `working`
    under its token is put past its lease, so the beat job `redrive` sends its task again at once and
    the next worker takes it over. A task that still finishes here posts only while nobody took the
    claim over (the token), so the message is answered once. Returns how many were given back."""
    with _held_lock:
        held = dict(_held)
    if not held:
        return 0
    expired = timezone.now() - CLAIM_LEASE - timedelta(seconds=1)
    released = 0
    for pk, token in held.items():
        released += ReplyClaim.objects.filter(pk=pk, token=token, state=ReplyClaim.State.WORKING).update(
            claimed_at=expired
        )
    if released:
        logger.info("AI reply claims given back by a stopping worker: %s", released)
    return released


def _schedule_takeover(chat: Chat, message: Message, now: datetime) -> None:
    """A person holds the chat: come back when their silence would let the AI take over."""
    if handoff.person_handling(chat) is None or _eager():
        return
    due = handoff.takeover_due_at(chat, timeout_sec=selectors.get_settings(chat.widget).takeover_timeout_sec)
    if due is None:
        return
    limit = float(getattr(settings, "CELERY_TASK_MAX_COUNTDOWN", 3600)) - 60
    enqueue(message.pk, countdown=min(max((due - now).total_seconds(), 0.0) + 1.0, limit))


def _claim(*, widget: Widget, chat: Chat, message: Message) -> ReplyClaim | None:
    token = secrets.token_hex(16)
    try:
        if transaction.get_autocommit():
            # One statement: autocommit makes it atomic, and a unique violation leaves no broken
            # transaction behind (saves the BEGIN/COMMIT round trips of an atomic block).
            return ReplyClaim.objects.create(widget=widget, chat=chat, message=message, token=token)
        with transaction.atomic():
            return ReplyClaim.objects.create(widget=widget, chat=chat, message=message, token=token)
    except IntegrityError:
        pass
    now = timezone.now()
    taken = ReplyClaim.objects.filter(
        message=message, state=ReplyClaim.State.WORKING, claimed_at__lt=now - CLAIM_LEASE
    ).update(token=token, claimed_at=now, attempts=F("attempts") + 1)
    return ReplyClaim.objects.get(message=message) if taken else None


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
    if floors.visitor_asks_for_person(question) and not pipeline.matches_trigger(
        list(assistant.escalation_triggers), question
    ):
        # A safety floor: the visitor asked for a person, so no provider is asked at all.
        return _finish(
            widget=widget,
            chat=chat,
            message=message,
            claim=claim,
            operator=operator,
            handoff_reason=floors.reason(floors.PERSON_REQUESTED),
            detail=floors.reason(floors.PERSON_REQUESTED),
            provider_ms=0.0,
        )
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
    started = time.monotonic()
    try:
        completion = complete(
            chain,
            prompt,
            temperature=assistant.temperature,
            deadline=started + PROVIDER_DEADLINE_SECONDS,
            max_operations=MAX_PROVIDER_OPERATIONS,
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
    nothing that arrived during generation makes the answer stale."""
    chat = chat_services.lock_chat(widget=widget, chat=chat)
    # One read under the chat's lock: the claim (locked), whether a newer visitor message arrived,
    # and the AI switch and shadow mode again (they may have changed while the provider worked).
    ai_row = AiSettings.objects.filter(widget_id=widget.pk)
    held = (
        ReplyClaim.objects.select_for_update()
        .filter(pk=claim.pk, token=claim.token)
        .annotate(
            newer_exists=Exists(_newer_visitor_messages(message.chat_id, message.widget_id, message.pk)),
            ai_enabled=Subquery(ai_row.values("enabled")[:1]),
            ai_shadow=Subquery(ai_row.values("shadow_mode")[:1]),
        )
        .first()
    )
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
            origin=REPLY_ORIGIN,
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
    recent = timezone.now() - ALERT_QUIET
    if Alert.objects.filter(
        widget=widget, kind=ALERT_KIND, acknowledged_at__isnull=True, created_at__gte=recent
    ).exists():
        return
    Alert.objects.create(
        widget=widget,
        kind=ALERT_KIND,
        message=message,
        details={"kind": exc.kind, "status": exc.status, "exhausted": exc.exhausted},
    )
