"""External-operator writes: create, rename, replace the URL (rotation), the lifecycle and its kill
switch, force-drain, soft delete, secret rotation with an overlap window, `delivery.test` probes,
the dispatch of visitor messages and the replies (`POST /v1/ai/replies`).

Every call travels through the webhook engine (apps.webhooks): one `Endpoint` per URL the operator
has used, one `Delivery` per call. States map onto the endpoint's mode: `active`/`testing` send,
`paused` holds (reversible: queued calls wait), `revoked` drops (every queued call is skipped at
once, and an engine that leased one skips it when it loads it)."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Case, Q, Value, When
from django.utils import timezone

from apps.agents.models import Agent
from apps.ai import services as ai_services
from apps.chats import services as chats
from apps.chats.models import Chat, Message
from apps.core import crypto
from apps.core.api.serializers import InvisibleCharacter, normalize_label
from apps.core.errors import ValidationFailed
from apps.core.models import Widget
from apps.webhooks import services as webhooks
from apps.webhooks.models import Delivery, Endpoint

from . import errors
from .models import ENDPOINT_OWNER, Call, ExternalOperator, Probe

State = ExternalOperator.State
SETTABLE_STATES = (State.TESTING, State.ACTIVE, State.PAUSED, State.REVOKED)
ESCALATION_MARKER = "[KEY_TO_OPERATOR]"
NAME_MAX = 150
REPLY_ORIGIN = "external_reply"


def secret_overlap() -> timedelta:
    """How long the previous signing secret keeps signing beside the new one after a rotation."""
    return timedelta(seconds=getattr(settings, "EXTERNAL_OPERATOR_SECRET_OVERLAP_SECONDS", 3600))


def effective_state(operator: ExternalOperator) -> str:
    """The lifecycle state a rotation returns to (the state itself otherwise)."""
    return operator.resume_state if operator.state == State.ROTATING else operator.state


def _mode_for(state: str) -> str:
    if state == State.REVOKED:
        return Endpoint.Mode.DROP
    if state == State.PAUSED:
        return Endpoint.Mode.HOLD
    return Endpoint.Mode.SEND


def _agent_status_for(state: str) -> str:
    """The operator's agent row follows the lifecycle, so whatever reads agents (the AI app's
    detached test, the agents list) sees an answering webhook operator only while it is active."""
    if state == State.REVOKED:
        return Agent.Status.BANNED
    return Agent.Status.ACTIVE if state == State.ACTIVE else Agent.Status.RELAXATION


def clean_name(name: str) -> str:
    """The name visitors read on the operator's messages: NFC, no invisible, control or
    bidirectional-control characters (product decision "Text that people read")."""
    name = (name or "").strip()
    if not name or len(name) > NAME_MAX:
        raise ValidationFailed(errors={"name": [f"1 to {NAME_MAX} characters, not blank."]})
    try:
        return normalize_label(name)
    except InvisibleCharacter as exc:
        message = f"Must not contain invisible or bidirectional control characters ({exc.code_point})."
        raise ValidationFailed(errors={"name": [message]}) from None


def _lock(widget: Widget, operator: ExternalOperator) -> ExternalOperator:
    return (
        ExternalOperator.objects.select_for_update(of=("self",))
        .select_related("endpoint", "draining", "agent")
        .get(pk=operator.pk, widget=widget, deleted_at=None)
    )


def _save(operator: ExternalOperator, *fields: str) -> None:
    operator.updated_at = timezone.now()
    operator.save(update_fields=[*fields, "updated_at"])


def _sync_agent(operator: ExternalOperator) -> None:
    """The agent takes the operator's name and the status its lifecycle gives, except that an agent
    suspended or deleted through the agents API stays banned until that API restores it."""
    status = _agent_status_for(effective_state(operator))
    Agent.objects.filter(pk=operator.agent_id, widget_id=operator.widget_id).update(
        status=Case(When(status=Agent.Status.BANNED, then=Value(Agent.Status.BANNED)), default=Value(status)),
        name=operator.name,
    )


def agent_return_status(agent: Agent) -> str | None:
    """The `agent_return` port: what a banned webhook agent returns to when the agents API restores
    it. The status its operator's lifecycle gives (as `_sync_agent` writes it), or None for a revoked
    operator, deleted or not: revoked is final. The operator is read without a lock (restore_agent
    holds the agent's row; a lifecycle move committing meanwhile writes the agent after it, so the
    row ends as the lifecycle says)."""
    operator = ExternalOperator.objects.filter(agent_id=agent.pk, widget_id=agent.widget_id).first()
    if operator is None:
        return Agent.Status.ACTIVE
    state = effective_state(operator)
    return None if state == State.REVOKED else _agent_status_for(state)


# --- create, update, delete -------------------------------------------------------------------------


@transaction.atomic
def create_external_operator(
    *, widget: Widget, name: str, url: str, secret: str | None = None, state: str = State.ACTIVE
) -> tuple[ExternalOperator, str]:
    """A `webhook` agent and its operator row, `active` unless told. Returns the operator and its
    signing secret (shown once). The URL passes the outbound address policy."""
    name = clean_name(name)
    if state not in SETTABLE_STATES or state == State.REVOKED:
        raise errors.InvalidState(errors={"state": ["testing, active or paused."]})
    webhooks.check_destination(url)
    secret = secret or crypto.generate_secret()
    agent = Agent.objects.create(
        widget=widget, name=name, type=Agent.Type.WEBHOOK, status=_agent_status_for(state), show_in_header=False
    )
    endpoint = webhooks.create_endpoint(
        widget=widget,
        owner=ENDPOINT_OWNER,
        owner_id=agent.pk,
        url=url,
        secret_encrypted=crypto.encrypt_secret(secret),
    )
    if state == State.PAUSED:
        webhooks.set_endpoint_mode(endpoint=endpoint, mode=Endpoint.Mode.HOLD)
    operator = ExternalOperator.objects.create(
        widget=widget, agent=agent, name=name, url=url, state=state, endpoint=endpoint
    )
    return operator, secret


@transaction.atomic
def update_external_operator(*, widget: Widget, operator: ExternalOperator, changes: dict) -> ExternalOperator:
    """Rename and/or replace the URL. A new URL gets a new endpoint (same secret) for every call from
    now on; calls still queued for the old one drain there (`rotating`) unless none are left."""
    operator = _lock(widget, operator)
    if operator.state == State.REVOKED:
        raise errors.OperatorRevoked("A revoked operator cannot be changed; delete it.")
    fields = []
    if "name" in changes:
        operator.name = clean_name(changes["name"])
        fields.append("name")
    url = changes.get("url")
    if url is not None and url != operator.url:
        if operator.state == State.ROTATING:
            raise errors.RotationInProgress("The previous URL still drains; wait or force-drain it first.")
        webhooks.check_destination(url)
        old = operator.endpoint
        new = webhooks.create_endpoint(
            widget=widget,
            owner=ENDPOINT_OWNER,
            owner_id=operator.agent_id,
            url=url,
            secret_encrypted=old.secret_encrypted,
        )
        Endpoint.objects.filter(pk=new.pk).update(
            previous_secret_encrypted=old.previous_secret_encrypted,
            previous_secret_until=old.previous_secret_until,
            mode=old.mode,
        )
        operator.url, operator.endpoint = url, new
        fields += ["url", "endpoint"]
        if webhooks.pending_count(old):
            operator.resume_state, operator.state, operator.draining = operator.state, State.ROTATING, old
            fields += ["resume_state", "state", "draining"]
        else:
            webhooks.set_endpoint_mode(endpoint=old, mode=Endpoint.Mode.DROP, reason="endpoint_replaced")
    if fields:
        _save(operator, *fields)
        _sync_agent(operator)
    return operator


@transaction.atomic
def delete_external_operator(*, widget: Widget, operator: ExternalOperator) -> None:
    """Soft delete: only a revoked operator (409 otherwise). Its calls and log stay for the record."""
    operator = _lock(widget, operator)
    if operator.state != State.REVOKED:
        raise errors.OperatorNotRevoked("Revoke the operator (the lifecycle's kill switch) before deleting it.")
    operator.deleted_at = timezone.now()
    _save(operator, "deleted_at")


# --- lifecycle ----------------------------------------------------------------------------------------


@transaction.atomic
def set_lifecycle(*, widget: Widget, operator: ExternalOperator, state: str) -> ExternalOperator:
    """Move to testing, active, paused or revoked. `revoked` is the kill switch: final, and every
    queued call of every endpoint of the operator is skipped at once. During a rotation the move
    applies to both endpoints and the operator stays `rotating` until the old one drains."""
    if state not in SETTABLE_STATES:
        raise errors.InvalidState(errors={"state": ["One of testing, active, paused, revoked."]})
    operator = _lock(widget, operator)
    if operator.state == State.REVOKED:
        if state == State.REVOKED:
            return operator
        raise errors.OperatorRevoked("Revoked is final: create a new operator instead.")
    if state == effective_state(operator):
        return operator
    endpoints = [operator.endpoint] + ([operator.draining] if operator.draining_id else [])
    for endpoint in endpoints:
        webhooks.set_endpoint_mode(endpoint=endpoint, mode=_mode_for(state), reason="operator_revoked")
    if state == State.REVOKED:
        operator.state, operator.resume_state, operator.draining = State.REVOKED, "", None
    elif operator.state == State.ROTATING:
        operator.resume_state = state
    else:
        operator.state = state
    _save(operator, "state", "resume_state", "draining")
    _sync_agent(operator)
    return operator


@transaction.atomic
def force_drain(*, widget: Widget, operator: ExternalOperator) -> tuple[ExternalOperator, int]:
    """Break a stuck rotation: the old endpoint's undelivered calls are abandoned (skipped, never
    sent) and the operator returns to its state. Returns the operator and how many were abandoned."""
    operator = _lock(widget, operator)
    if operator.state == State.REVOKED:
        raise errors.OperatorRevoked("A revoked operator has nothing to drain.")
    if operator.state != State.ROTATING:
        raise errors.NotRotating("Nothing drains: the operator is not rotating.")
    abandoned = webhooks.abandon_pending(endpoint=operator.draining, reason="force_drained")
    webhooks.set_endpoint_mode(endpoint=operator.draining, mode=Endpoint.Mode.DROP, reason="force_drained")
    _finish_rotation(operator)
    return operator, abandoned


def _finish_rotation(operator: ExternalOperator) -> None:
    operator.state, operator.resume_state, operator.draining = operator.resume_state, "", None
    _save(operator, "state", "resume_state", "draining")


def finish_drained_rotations(endpoint_ids: set[int] | None = None) -> int:
    """A rotating operator whose old endpoint has nothing left to send returns to its state (the
    old endpoint is retired). The engine's settled hook passes the endpoints whose rows settled;
    the beat job (`endpoint_ids` None) looks at every rotating operator, so a lost hook only
    delays the end of a rotation. Returns how many finished."""
    rotating = ExternalOperator.objects.filter(state=State.ROTATING, deleted_at=None)
    if endpoint_ids is not None:
        rotating = rotating.filter(draining_id__in=endpoint_ids)
    finished = 0
    for pk in rotating.values_list("pk", flat=True):
        with transaction.atomic():
            operator = ExternalOperator.objects.select_for_update(of=("self",)).select_related("draining").get(pk=pk)
            if operator.state != State.ROTATING or operator.draining_id is None:
                continue
            if webhooks.pending_count(operator.draining):
                continue
            webhooks.set_endpoint_mode(endpoint=operator.draining, mode=Endpoint.Mode.DROP, reason="endpoint_replaced")
            _finish_rotation(operator)
            finished += 1
    return finished


# --- secrets -------------------------------------------------------------------------------------------


@transaction.atomic
def rotate_operator_secret(*, widget: Widget, operator: ExternalOperator, secret: str | None = None) -> str:
    """A new signing secret (returned once). For `secret_overlap()` the old one signs beside it
    (`X-Service-Signature-Previous`, a second `webhook-signature` entry), so the receiver can switch
    without refusing a call."""
    operator = _lock(widget, operator)
    if operator.state == State.REVOKED:
        raise errors.OperatorRevoked("A revoked operator has no secret to rotate.")
    if secret is not None and not 16 <= len(secret) <= 256:
        raise ValidationFailed(errors={"secret": ["16 to 256 characters."]})
    secret = secret or crypto.generate_secret()
    endpoints = [operator.endpoint] + ([operator.draining] if operator.draining_id else [])
    webhooks.rotate_endpoint_secrets(endpoints=endpoints, secret=secret, overlap=secret_overlap())
    operator.secret_rotated_at = timezone.now()
    _save(operator, "secret_rotated_at")
    return secret


# --- calls -----------------------------------------------------------------------------------------


def _body(*, key: uuid.UUID, event_type: str, causation_id: uuid.UUID, data: dict) -> bytes:
    frame = {"id": str(key), "type": event_type, "causation_id": str(causation_id), "data": data}
    return json.dumps(frame, ensure_ascii=False, separators=(",", ":")).encode()


@transaction.atomic
def send_probe(*, widget: Widget, operator: ExternalOperator) -> Probe:
    """Enqueue one synthetic `delivery.test` call to the operator's current URL (one at a time)."""
    operator = _lock(widget, operator)
    state = effective_state(operator)
    if state == State.REVOKED:
        raise errors.OperatorRevoked("A revoked operator takes no calls.")
    if state == State.PAUSED:
        raise errors.OperatorPaused("Resume the operator (lifecycle active or testing) to test it.")
    if Probe.objects.filter(widget=widget, operator=operator, delivery__status=Delivery.Status.PENDING).exists():
        raise errors.TestPending("The previous probe has not settled; poll it.")
    key, causation = uuid.uuid4(), uuid.uuid4()
    data = {"button_guid": widget.button_guid, "chat_id": None, "message_id": None, "client_id": None, "text": ""}
    body = _body(key=key, event_type="delivery.test", causation_id=causation, data=data)
    row = webhooks.enqueue_call(endpoint=operator.endpoint, event_type="delivery.test", body=body, key=key)
    return Probe.objects.create(widget=widget, operator=operator, causation_id=causation, delivery=row)


def answering_operators(widget: Widget) -> list[ExternalOperator]:
    """The operators that receive a widget's visitor messages: active ones, rotating ones included,
    unless their agent was suspended or deleted through the agents API (banned)."""
    return list(
        ExternalOperator.objects.filter(widget=widget, deleted_at=None)
        .filter(Q(state=State.ACTIVE) | Q(state=State.ROTATING, resume_state=State.ACTIVE))
        .exclude(agent__status=Agent.Status.BANNED)
        .select_related("endpoint")
        .order_by("created_at", "pk")
    )


def answer_externally(chat: Chat, message: Message) -> bool:
    """The AI reply worker's external answerer (this app provides the `external_answerer` port):
    see dispatch_visitor_message."""
    return dispatch_visitor_message(chat=chat, message=message)


def dispatch_visitor_message(*, chat: Chat, message: Message) -> bool:
    """Send a visitor message to every active external operator of the chat's widget, each as a
    signed call with its own causation id: `chat.assigned` for the operator's first call about the
    chat, `message.created` after. Idempotent per operator and message (a repeated task sends
    nothing twice). Returns whether the widget has an answering operator: then the message is
    theirs, and the built-in AI stays quiet, also when a person handles the chat (nothing is sent:
    `machine_may_answer` says no machine may answer it now)."""
    widget = chat.widget
    operators = answering_operators(widget)
    if not operators:
        return False
    if message.author_kind != Message.Author.CLIENT or not ai_services.machine_may_answer(
        chat=chat, now=timezone.now()
    ):
        return True
    with transaction.atomic():
        seen = set(
            Call.objects.filter(widget=widget, chat=chat, operator__in=operators).values_list("operator_id", flat=True)
        )
        done = set(
            Call.objects.filter(widget=widget, message=message, operator__in=operators).values_list(
                "operator_id", flat=True
            )
        )
        for operator in operators:
            if operator.pk in done:
                continue
            event_type = "message.created" if operator.pk in seen else "chat.assigned"
            key, causation = uuid.uuid4(), uuid.uuid4()
            data = {
                "button_guid": widget.button_guid,
                "chat_id": chat.pk,
                "message_id": message.pk,
                "client_id": chat.contact.guid,
                "text": message.body,
            }
            try:
                with transaction.atomic():
                    call = Call.objects.create(
                        widget=widget,
                        operator=operator,
                        chat=chat,
                        message=message,
                        causation_id=causation,
                        type=event_type,
                    )
                    body = _body(key=key, event_type=event_type, causation_id=causation, data=data)
                    call.delivery = webhooks.enqueue_call(
                        endpoint=operator.endpoint, event_type=event_type, body=body, key=key
                    )
                    call.save(update_fields=["delivery"])
            except IntegrityError:  # another worker sent this message to this operator meanwhile
                continue
    return True


# --- replies ---------------------------------------------------------------------------------------


@dataclass
class ReplyResult:
    outcome: str  # "posted", "handed_off" or "discarded"
    message: Message | None = None


def needs_escalation_scope(*, content: str | None, escalate: bool) -> bool:
    return bool(escalate) or ESCALATION_MARKER in (content or "")


def accept_reply(
    *,
    widget: Widget,
    scopes: frozenset[str],
    room_id: int,
    causation_id: str,
    content: str | None,
    escalate: bool = False,
) -> ReplyResult:
    """`POST /v1/ai/replies`. Order: the escalation scope (403, nothing read), the causation (404,
    unknown and foreign alike), the binding (409, not consumed: another room, an operator revoked
    since, or one whose agent was suspended or deleted through the agents API), then the call is consumed once
    (a second reply is 409) and the content posted as the operator, or the chat handed to people
    (escalation, the marker, empty content, or a platform safety floor: `apps.ai.services.check_reply`). The
    call row is locked: concurrent replies with one causation id post one message."""
    if needs_escalation_scope(content=content, escalate=escalate) and "responder:escalate" not in scopes:
        raise errors.EscalationScopeRequired("`escalate` and the `[KEY_TO_OPERATOR]` marker need responder:escalate.")
    try:
        causation = uuid.UUID(str(causation_id))
    except ValueError:
        raise errors.CausationNotFound() from None
    with transaction.atomic():
        call = (
            Call.objects.select_for_update(of=("self",))
            .select_related(
                "operator", "operator__agent", "operator__endpoint", "operator__draining", "message", "chat"
            )
            .filter(widget=widget, causation_id=causation)
            .first()
        )
        if call is None:
            raise errors.CausationNotFound()
        operator = call.operator
        if call.chat_id != room_id:  # another room (of this widget or another one)
            raise errors.BindingMismatch("The causation id belongs to another room.")
        if operator.deleted_at is not None or operator.state == State.REVOKED:
            raise errors.BindingMismatch("The call's operator is revoked and can no longer answer.")
        if operator.agent.status == Agent.Status.BANNED:
            raise errors.BindingMismatch("The call's operator is suspended; restore its agent to answer.")
        if call.consumed_at is not None:
            raise errors.CausationConsumed("This causation id was already answered.")
        result = _apply_reply(widget=widget, call=call, content=content or "", escalate=escalate)
        call.consumed_at, call.outcome = timezone.now(), result.outcome
        call.save(update_fields=["consumed_at", "outcome"])
    return result


def _operator_secrets(operator: ExternalOperator) -> list[str]:
    """The operator's signing secrets (current, and the previous one in its overlap window): a
    reply that quotes one is withheld (the `secret` safety floor)."""
    out = []
    for endpoint in (operator.endpoint, operator.draining):
        if endpoint is None:
            continue
        for token in (endpoint.secret_encrypted, endpoint.previous_secret_encrypted):
            secret = crypto.decrypt_secret(token) if token else None
            if secret:
                out.append(secret)
    return out


def _apply_reply(*, widget: Widget, call: Call, content: str, escalate: bool) -> ReplyResult:
    chat = chats.lock_chat(widget=widget, chat=call.chat)
    operator = call.operator
    if not ai_services.machine_may_answer(chat=chat, now=timezone.now()):
        return ReplyResult("discarded")  # a person took the chat meanwhile: the machine stays quiet
    reason = None
    if escalate or ESCALATION_MARKER in content or not content.strip():
        reason = "escalate" if escalate else ("marker" if ESCALATION_MARKER in content else "empty_reply")
    else:
        floor = ai_services.check_reply(content, question=call.message.body, known_secrets=_operator_secrets(operator))
        reason = ai_services.reason(floor) if floor is not None else None
    if reason is not None:
        ai_services.hand_to_people(
            widget=widget, chat=chat, operator=operator.agent, reason=reason, question=call.message.body
        )
        return ReplyResult("handed_off")
    message = ai_services.post_as_operator(
        widget=widget, chat=chat, operator=operator.agent, text=content, origin=REPLY_ORIGIN
    )
    return ReplyResult("posted", message)
