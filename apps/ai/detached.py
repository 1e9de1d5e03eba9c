"""The detached assistant test: the real pipeline of the AI operator (prompt assembly, retrieval,
the provider with its backup chain, the transformation and escalation classifier) on a question the
owner sends, without a chat.

Order of a POST (each step fails closed before paid work):
input rules (400/413/415/422) -> assistant, operator, transport and credential (404/409) -> the
widget's in-flight slot (429 busy; 503 `admission_unavailable` when the store is down) -> the
idempotency key, claimed in its own committed transaction and kept 86 400 s whatever follows
(409 `idempotency_reused`; 503 `test_unavailable`) -> the start budget, 10 per 60 s (429; the key is
released since nothing was paid for) -> the knowledge-base search (`rag_enabled`: the question's
embedding is a paid provider call) and the prompt -> the provider chain under one deadline and at most 10 HTTP
operations -> the transformation and the platform safety floors (`pipeline.check_floors`, as the AI
operator at work). The slot is released when the test ends.
"""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import dataclass, field

from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import Case, Q, When

from apps.agents.models import Agent
from apps.core import idempotency
from apps.core.errors import IdempotencyKeyReused
from apps.core.models import IdempotencyKey, Widget
from apps.core.ratelimit import Budget, Slot, Slots, SlotStoreUnavailable

from . import errors, handoff, phrases, pipeline, retrieval, selectors
from .models import Assistant, Credential

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 131072
MAX_TEXT = 4000
MAX_HISTORY = 20
MAX_TOTAL = 20000
MAX_QUERY_BYTES = 128
PROVIDER_DEADLINE_SECONDS = 45.0
MAX_PROVIDER_OPERATIONS = 10
# One test in flight per widget; a slot outlives the provider deadline, so a crashed test frees its own.
IN_FLIGHT = Slots("ai-detached-test", 1, ttl=60)
STARTED_BUDGET = Budget("ai_detached_test_started", 10, 60)
LOCALES = phrases.LANGUAGES
OPERATOR_STATES = ("online", "offline", "unknown")
_ALLOWED_CONTROLS = "\n\r\t"

LIMITS = {
    "body_bytes": MAX_BODY_BYTES,
    "question_characters": MAX_TEXT,
    "history_items": MAX_HISTORY,
    "history_content_characters": MAX_TEXT,
    "total_characters": MAX_TOTAL,
    "started_per_60_seconds": STARTED_BUDGET.limit,
    "in_flight": IN_FLIGHT.count,
    "provider_http_operations": MAX_PROVIDER_OPERATIONS,
    "provider_deadline_seconds": int(PROVIDER_DEADLINE_SECONDS),
    "idempotency_key_retention_seconds": 86400,
}


# --- input ------------------------------------------------------------------------------------------------


def _no_duplicates(pairs):
    seen = {}
    for key, value in pairs:
        if key in seen:
            raise errors.DuplicateMember(
                f"The member {key!r} appears more than once.", errors={key: ["Duplicate member."]}
            )
        seen[key] = value
    return seen


def _bad_text(value: object, path: str, problems: dict) -> str | None:
    if not isinstance(value, str):
        problems[path] = ["Must be a string."]
        return None
    if not value.strip():
        problems[path] = ["Must contain a non-whitespace character."]
        return None
    if len(value) > MAX_TEXT:
        problems[path] = [f"At most {MAX_TEXT} characters."]
        return None
    if any((ord(ch) < 0x20 and ch not in _ALLOWED_CONTROLS) or 0x7F <= ord(ch) <= 0x9F for ch in value):
        problems[path] = ["Must not contain control characters."]
        return None
    return value


@dataclass
class TestInput:
    question: str
    history: list[dict] = field(default_factory=list)
    operator_id: int | None = None
    locale: str | None = None
    operators: str | None = None


def parse_body(raw: bytes, content_type: str | None) -> TestInput:
    media = (content_type or "").split(";")[0].strip().lower()
    if media != "application/json":
        raise errors.TestUnsupportedMediaType("Send the body as application/json.")
    if len(raw) > MAX_BODY_BYTES:
        raise errors.TestBodyTooLarge(f"The body exceeds {MAX_BODY_BYTES} bytes.")
    try:
        text = raw.decode("utf-8")
        data = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
    except errors.DuplicateMember:
        raise
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise errors.TestInvalidJson("The body is not valid JSON.") from None
    if not isinstance(data, dict):
        raise errors.InvalidInput("The body must be a JSON object.", errors={"body": ["Expected a JSON object."]})
    problems: dict[str, list[str]] = {}
    for name in data:
        if name not in ("question", "history", "operator_id", "locale", "operators"):
            problems[name] = ["Unknown field."]
    if "question" not in data:
        problems["question"] = ["This field is required."]
        question = None
    else:
        question = _bad_text(data["question"], "question", problems)
    history: list[dict] = []
    if "history" in data:
        raw_history = data["history"]
        if not isinstance(raw_history, list):
            problems["history"] = ["Must be a list."]
        elif len(raw_history) > MAX_HISTORY:
            problems["history"] = [f"At most {MAX_HISTORY} items."]
        else:
            for i, item in enumerate(raw_history):
                if not isinstance(item, dict) or set(item) != {"role", "content"}:
                    problems[f"history.{i}"] = ["Must be an object with exactly `role` and `content`."]
                    continue
                if item["role"] not in ("user", "assistant"):
                    problems[f"history.{i}.role"] = ["Must be user or assistant."]
                content = _bad_text(item["content"], f"history.{i}.content", problems)
                if content is not None:
                    history.append({"role": item["role"], "content": content})
    operator_id = None
    if "operator_id" in data:
        value = data["operator_id"]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            problems["operator_id"] = ["Must be a positive integer."]
        else:
            operator_id = value
    locale = None
    if "locale" in data:
        if data["locale"] not in LOCALES:
            problems["locale"] = [f"Must be one of {', '.join(LOCALES)}."]
        else:
            locale = data["locale"]
    operators = None
    if "operators" in data:
        if data["operators"] not in OPERATOR_STATES:
            problems["operators"] = ["Must be online, offline or unknown."]
        else:
            operators = data["operators"]
    if question is not None and not problems:
        total = len(question) + sum(len(item["content"]) for item in history)
        if total > MAX_TOTAL:
            problems["body"] = [f"question and history together exceed {MAX_TOTAL} characters."]
    if problems:
        raise errors.InvalidInput("The test input breaks an input rule.", errors=problems)
    return TestInput(question=question, history=history, operator_id=operator_id, locale=locale, operators=operators)


def _reject_constant(value: str):
    raise ValueError(value)


def parse_inspection_query(raw_query: str) -> int | None:
    """`operator_id` only: canonical positive decimal, once; the raw query at most 128 bytes."""
    if len(raw_query.encode("latin-1", errors="replace")) > MAX_QUERY_BYTES:
        raise errors.InvalidInput("The query is too long.", errors={"query": [f"At most {MAX_QUERY_BYTES} bytes."]})
    if not raw_query:
        return None
    parts = raw_query.split("&")
    problems: dict[str, list[str]] = {}
    names = [part.split("=", 1)[0] for part in parts]
    value = None
    for part, name in zip(parts, names, strict=True):
        if name != "operator_id":
            problems[name or "query"] = ["Unknown parameter."]
            continue
        if names.count(name) > 1:
            problems["operator_id"] = ["Give this parameter once."]
            continue
        raw = part.split("=", 1)[1] if "=" in part else ""
        if not raw.isascii() or not raw.isdigit() or raw.startswith("0") or len(raw) > 19:
            problems["operator_id"] = ["Must be a positive decimal integer."]
            continue
        value = int(raw)
        if value > 2**63 - 1:
            problems["operator_id"] = ["Must be a positive decimal integer."]
    if problems:
        raise errors.InvalidInput("The query breaks an input rule.", errors=problems)
    return value


# --- configuration ----------------------------------------------------------------------------------------


@dataclass
class Resolved:
    assistant: Assistant
    operator: Agent | None
    credential: Credential
    by_id: dict
    configured_provider: str
    configured_model: str | None


_RUNNING = [status for status in Agent.Status.values if status != Agent.Status.BANNED]


def _webhook_active(widget: Widget) -> bool:
    return Agent.objects.filter(widget=widget, type=Agent.Type.WEBHOOK, status=Agent.Status.ACTIVE).exists()


def _path_id(raw) -> int | None:
    """The path's id as a positive 64-bit integer, or None (ASCII digits only: `str.isdigit` also
    accepts '²', which int() refuses)."""
    text = str(raw)
    if not (text.isascii() and text.isdigit()) or len(text) > 19:
        return None
    value = int(text)
    return value if 0 < value < 2**63 else None


def resolve(widget: Widget, *, assistant_id, operator_id: int | None) -> Resolved:
    """The assistant, its operator and the credential, or the named 404/409 before any network call."""
    pk = _path_id(assistant_id)
    assistant = Assistant.objects.filter(widget=widget, pk=pk).first() if pk is not None else None
    if assistant is None:
        raise errors.AssistantNotFound("No such assistant.")
    if operator_id is not None:
        operator = Agent.objects.filter(widget=widget, pk=operator_id).first()
        if operator is None or (operator.type == Agent.Type.AI and operator.ai_assistant_id != assistant.pk):
            raise errors.OperatorNotFound("No such operator of this assistant.")
        if operator.type == Agent.Type.WEBHOOK:
            raise errors.UnsupportedTransport("An external (webhook) operator cannot be tested here.")
        if operator.type != Agent.Type.AI:
            raise errors.OperatorNotFound("No such operator of this assistant.")
        webhook = _webhook_active(widget)
    else:
        # One query: the assistant's running AI operators (two tell "several") and, first, an active
        # webhook operator (which makes the widget's chats untestable here).
        rows = list(
            Agent.objects.filter(widget=widget)
            .filter(
                Q(type=Agent.Type.AI, ai_assistant_id=assistant.pk, status__in=_RUNNING)
                | Q(type=Agent.Type.WEBHOOK, status=Agent.Status.ACTIVE)
            )
            .order_by(Case(When(type=Agent.Type.WEBHOOK, then=0), default=1), "id")[:3]
        )
        webhook = bool(rows) and rows[0].type == Agent.Type.WEBHOOK
        bound = [a for a in rows if a.type == Agent.Type.AI]
        if len(bound) > 1:
            raise errors.AmbiguousOperator("Several AI operators run this assistant; name one with operator_id.")
        operator = bound[0] if bound else None
    if webhook:
        raise errors.UnsupportedTransport(
            "The widget's chats are answered by its external (webhook) operator, which this test cannot simulate."
        )
    by_id = selectors.credential_map(widget)
    credential = selectors.resolve_credential(widget, operator=operator, assistant=assistant, by_id=by_id)
    if credential is None:
        raise errors.TestCredentialUnavailable("No active provider credential resolves for this assistant.")
    config = selectors.provider_config(credential, assistant=assistant)
    return Resolved(
        assistant=assistant,
        operator=operator,
        credential=credential,
        by_id=by_id,
        configured_provider=credential.provider,
        configured_model=config.model,
    )


BASE_LIMITATIONS = [
    "Simulated: no chat is created, nothing is sent to a visitor and no statistics or webhooks are produced.",
]


def inspection(widget: Widget, *, assistant_id, operator_id: int | None) -> dict:
    resolved = resolve(widget, assistant_id=assistant_id, operator_id=operator_id)
    return {
        "assistant_id": resolved.assistant.pk,
        "operator_id": resolved.operator.pk if resolved.operator else None,
        "assistant_enabled": resolved.assistant.enabled,
        "configured_provider": resolved.configured_provider,
        "configured_model": resolved.configured_model,
        "configuration_resolved": True,
        "provider_verified": False,
        "provider_http_operations": 0,
        "chat_created": False,
        "limits": LIMITS,
        "limitations": [*BASE_LIMITATIONS, "Inspection only: the provider was not called."],
    }


# --- admission --------------------------------------------------------------------------------------------


def acquire_slot(widget: Widget) -> Slot:
    try:
        slot = IN_FLIGHT.acquire(widget.pk)
    except SlotStoreUnavailable:
        raise errors.AdmissionUnavailable("The admission store is unavailable; nothing was started.") from None
    if slot is None:
        raise errors.TestRateLimited("A detached test of this widget is already running.", headers={"Retry-After": "1"})
    return slot


def release_slot(widget: Widget, slot: Slot) -> None:
    IN_FLIGHT.release(slot)


def claim_key(widget: Widget, *, key: str, path: str) -> IdempotencyKey:
    """Claim in a statement of its own that commits now: the key stays taken whatever follows.

    The common case, a fresh key, is one INSERT in autocommit (one round trip and the commit); only a
    key that is taken already (reused, or an expired row to replace) takes the general claim path."""
    try:
        if not transaction.get_connection().in_atomic_block:
            try:
                return IdempotencyKey.objects.create(widget=widget, key=key, method="POST", path=path[:500])
            except IntegrityError:
                pass  # taken: the general path below tells a reuse from an expired row
        with transaction.atomic():
            return idempotency.claim(widget=widget, key=key, method="POST", path=path)
    except IdempotencyKeyReused:
        raise errors.IdempotencyReused(
            "This idempotency key was already used for a detached test; no saved answer is returned."
        ) from None
    except DatabaseError:
        raise errors.TestUnavailable("The idempotency store is unavailable; nothing was started.") from None


def consume_start(widget: Widget, row: IdempotencyKey) -> None:
    try:
        decision = STARTED_BUDGET.consume(widget.pk)
    except Exception:  # noqa: BLE001
        row.delete()
        raise errors.AdmissionUnavailable("The admission store is unavailable; nothing was started.") from None
    if not decision.allowed:
        row.delete()  # nothing was paid for: the key is free again
        raise errors.TestRateLimited(
            f"At most {STARTED_BUDGET.limit} detached tests start per 60 seconds per widget.",
            headers={"Retry-After": str(max(1, math.ceil(decision.retry_after)))},
        )


def record_result(row: IdempotencyKey, status: int) -> None:
    """Record the answer's status under the claim. It is informative (the claim itself is what keeps
    the key, and a reuse never replays it), so a database error here does not fail the answer."""
    try:
        with transaction.atomic():
            idempotency.record(row, status=status)
    except DatabaseError:
        pass


# --- the run ----------------------------------------------------------------------------------------------


@dataclass
class Plan:
    """Everything the provider phase needs, prepared synchronously (database reads) beforehand."""

    widget: Widget
    resolved: Resolved
    chain: list
    messages: list
    locale: str
    operators: dict
    presence_context_enabled: bool
    rag: retrieval.Retrieval
    overrides: dict
    triggers: list[str]
    question: str
    temperature: float | None
    slot: Slot
    row: IdempotencyKey


def _operators_state(widget: Widget, given: str | None) -> dict:
    if given is not None:
        return {"state": given, "source": "request"}
    state = handoff.operators_state(widget)
    return {"state": state, "source": "presence_unavailable" if state == "unknown" else "presence"}


def _locale(widget: Widget, given: str | None, question: str) -> str:
    if given is not None:
        return given
    detected = pipeline.detect_language(question)
    if detected in LOCALES:
        return detected
    return handoff.widget_locale(widget)


def prepare(widget: Widget, *, assistant_id, data: TestInput, key: str, path: str) -> Plan:
    """Everything before paid work (synchronous: database and admission store)."""
    resolved = resolve(widget, assistant_id=assistant_id, operator_id=data.operator_id)
    settings_row = selectors.get_settings(widget)
    assistant = resolved.assistant
    locale = _locale(widget, data.locale, data.question)
    operators = _operators_state(widget, data.operators)
    credential = resolved.credential
    chain = [
        selectors.provider_config(c, assistant=assistant)
        for c in selectors.credential_chain(widget, credential, resolved.by_id)
    ]
    from .providers import ChatMessage

    slot = acquire_slot(widget)
    try:
        row = claim_key(widget, key=key, path=path)
        consume_start(widget, row)
        # The knowledge-base search embeds the question (a paid provider call): only an admitted test.
        rag = retrieval.retrieve(
            widget=widget,
            assistant=assistant,
            question=data.question,
            enabled=settings_row.rag_enabled or assistant.rag_enabled,  # as the operator at work
        )
        messages = [
            ChatMessage(role=m.role, content=m.content)
            for m in pipeline.assemble_messages(
                system_prompt=assistant.system_prompt,
                persona=assistant.persona,
                knowledge=rag.chunks,
                history=data.history,
                question=data.question,
            )
        ]
    except BaseException:
        release_slot(widget, slot)
        raise
    return Plan(
        widget=widget,
        resolved=resolved,
        chain=chain,
        messages=messages,
        locale=locale,
        operators=operators,
        presence_context_enabled=settings_row.presence_context_enabled,
        rag=rag,
        overrides=settings_row.phrases or {},
        triggers=list(assistant.escalation_triggers),
        question=data.question,
        temperature=assistant.temperature,
        slot=slot,
        row=row,
    )


def provider_error(exc) -> Exception:
    """The problem a provider failure answers with."""
    operations = len(getattr(exc, "attempts", ()) or ())
    if exc.kind == "timeout" or getattr(exc, "exhausted", None) in ("deadline", "operations"):
        return errors.TestBudgetExhausted(
            "The provider did not answer within the test's budget.", kind=exc.kind, provider_http_operations=operations
        )
    return errors.ProviderFailure(
        "The provider and every declared backup failed.",
        kind=exc.kind,
        provider_status=exc.status,
        provider_http_operations=operations,
    )


async def run_provider(plan: Plan):
    """The paid part: the chain under one deadline and at most 10 HTTP operations."""
    from .providers import acomplete

    return await acomplete(
        plan.chain,
        plan.messages,
        temperature=plan.temperature,
        deadline=time.monotonic() + PROVIDER_DEADLINE_SECONDS,
        max_operations=MAX_PROVIDER_OPERATIONS,
    )


def result(plan: Plan, completion) -> dict:
    outcome = pipeline.transform(
        question=plan.question,
        answer=completion.text,
        triggers=plan.triggers,
        locale=plan.locale,
        operators_state=plan.operators["state"],
        presence_context_enabled=plan.presence_context_enabled,
        overrides=plan.overrides,
    )
    outcome = pipeline.check_floors(
        outcome,
        question=plan.question,
        known_secrets=[config.api_key for config in plan.chain],
        system_prompt=plan.resolved.assistant.system_prompt,
        knowledge=plan.rag.chunks,
        locale=plan.locale,
        operators_state=plan.operators["state"],
        presence_context_enabled=plan.presence_context_enabled,
        overrides=plan.overrides,
    )
    limitations = list(BASE_LIMITATIONS)
    if plan.rag.note:
        limitations.append(plan.rag.note)
    if plan.operators["source"] == "request":
        limitations.append("Operator presence was given by the request, not read.")
    resolved = plan.resolved
    return {
        "answer": outcome.answer,
        "assistant_id": resolved.assistant.pk,
        "operator_id": resolved.operator.pk if resolved.operator else None,
        "assistant_enabled": resolved.assistant.enabled,
        "configured_provider": resolved.configured_provider,
        "configured_model": resolved.configured_model,
        "provider": completion.provider,
        "model": completion.model,
        "provider_path": "fallback" if completion.fallback_used else "primary",
        "locale": plan.locale,
        "operators": plan.operators,
        "presence_context_enabled": plan.presence_context_enabled,
        "rag_status": plan.rag.status,
        "transformation": outcome.transformation,
        "classifier": outcome.classifier,
        "escalation": outcome.escalation,
        "outcome": outcome.outcome,
        "offline_outcome_suppressed": outcome.offline_outcome_suppressed,
        "provider_http_operations": len(completion.attempts),
        "latency_ms": round(completion.latency_ms, 1),
        "chat_created": False,
        "limitations": limitations,
    }
