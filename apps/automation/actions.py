"""The one action engine: what a macro or an automation rule does to a chat.

An action is `{"type": <name>, ...its members}`; a list holds 1 to MAX_ACTIONS of them, run in
order. `validate_actions` checks a list's shape against the widget (every id and label name it
names must be the widget's own) and returns what is stored; `run_actions` runs a stored list on one
chat in one transaction, each action through the service that owns the change (messages and notes,
labels, transfer, department, close), so an action has exactly the effects of the same change made
by hand: events, statistics facts, webhooks, websocket frames.

All or nothing: the first action a service refuses rolls back every earlier one (their rows, their
events, their outbox rows, their after-commit pushes) and raises MacroActionRefused naming it.

Who writes a message: the acting operator when there is one (a macro run from the console); without
one (an API token, a rule) the message is an operator message with no agent, the transcript's shape
of the proactive opening: the visitor sees the widget's name, the console "Operator", and it is not
counted as a person's answer (no first-response time, no claim of the chat), which a rule's canned
text is not.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import Any

from django.db import transaction

from apps.agents.models import Agent, Department
from apps.canned import selectors as canned_selectors
from apps.canned import services as canned_services
from apps.chats import services as chat_services
from apps.chats.models import Chat, Label, Message
from apps.core.api.serializers import unstorable_text, validate_https_link
from apps.core.errors import AppError, NotFound, ValidationFailed
from apps.core.models import Widget

SEND_MESSAGE = "send_message"
ADD_NOTE = "add_note"
ADD_LABELS = "add_labels"
REMOVE_LABELS = "remove_labels"
ASSIGN_AGENT = "assign_agent"
ASSIGN_DEPARTMENT = "assign_department"
CLOSE = "close"
SEND_WEBHOOK = "send_webhook"  # automation rules only: run by the caller's `webhook` hook

ACTION_TYPES: tuple[str, ...] = (
    SEND_MESSAGE,
    ADD_NOTE,
    ADD_LABELS,
    REMOVE_LABELS,
    ASSIGN_AGENT,
    ASSIGN_DEPARTMENT,
    CLOSE,
)
MAX_ACTIONS = 10
TEXT_MAX = 4000
LABELS_MAX = 20  # a chat carries at most 20 labels: a longer list could never run
URL_MAX = 2048
BY = ("macro", "automation")

# Called for a send_webhook action with (chat, action); refuses by raising an AppError.
WebhookHook = Callable[[Chat, dict], None]


class MacroActionRefused(AppError):
    """One action of a macro or a rule was refused by the service that owns it, so none of the
    list's actions took effect. `action_index` (from 0) names the action, `action_type` its type,
    and `refusal` carries the refusal's own `code` and `detail` (and `errors` when it had some)."""

    status, code, title = 422, "macro_action_refused", "An action was refused"

    def __init__(self, *, action_index: int, code: str, detail: str, action_type: str = "", errors=None):
        self.action_index = action_index
        self.action_type = action_type
        self.refusal_code = code
        self.refusal_detail = detail
        refusal: dict[str, Any] = {"code": code, "detail": detail}
        if errors:
            refusal["errors"] = errors
        super().__init__(
            f"Action {action_index + 1} ({action_type}) was refused: {detail}",
            action_index=action_index,
            action_type=action_type,
            refusal=refusal,
        )


# --- validation -------------------------------------------------------------------------------------


class _Invalid(Exception):
    """Messages for one member (`messages`), or for paths under it (`nested`: suffix -> messages)."""

    def __init__(self, *messages: str, nested: dict[str, list[str]] | None = None):
        super().__init__(messages)
        self.messages = list(messages)
        self.nested = nested or {}


def _text(widget: Widget, value: Any, *, canned: bool) -> str:
    if not isinstance(value, str):
        raise _Invalid("Must be a string.")
    if not value.strip():
        raise _Invalid("Must not be blank.")
    if len(value) > TEXT_MAX:
        raise _Invalid(f"Ensure this field has no more than {TEXT_MAX} characters.")
    if canned:
        try:
            canned_services.check_text(value)
        except ValidationFailed as err:
            raise _Invalid(*(err.errors or {}).get("text", [err.detail])) from None
    return value


def _label_key(name: str) -> str:
    """What the widget's labels are compared by (`Label.key`): NFC, trimmed, case-folded."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", name).strip().casefold())


def _labels(widget: Widget, value: Any) -> list[str]:
    if not isinstance(value, list) or not value:
        raise _Invalid("Must be a non-empty list of label names.")
    if len(value) > LABELS_MAX:
        raise _Invalid(f"At most {LABELS_MAX} labels.")
    nested: dict[str, list[str]] = {}
    keys: dict[int, str] = {}
    for index, name in enumerate(value):
        if not isinstance(name, str) or not name.strip():
            nested[str(index)] = ["Must be a label name."]
        else:
            keys[index] = _label_key(name)
    known = dict(Label.objects.filter(widget=widget, key__in=set(keys.values())).values_list("key", "name"))
    names: list[str] = []
    for index, key in keys.items():
        if key not in known:
            nested[str(index)] = [f"This widget has no label named “{value[index].strip()}”."]
        elif known[key] not in names:
            names.append(known[key])
    if nested:
        raise _Invalid(nested=nested)
    return names


def _id(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Invalid("Must be an integer id.")
    return value


def _agent_id(widget: Widget, value: Any) -> int:
    agent = Agent.objects.filter(widget=widget, pk=_id(value)).only("status").first()
    if agent is None:
        raise _Invalid("Unknown id.")  # another widget's agent reads exactly like a missing one
    if agent.status == Agent.Status.BANNED:
        raise _Invalid("The agent is banned.")
    return value


def _department_id(widget: Widget, value: Any) -> int:
    if not Department.objects.filter(widget=widget, pk=_id(value)).exists():
        raise _Invalid("Unknown id.")
    return value


def _url(widget: Widget, value: Any) -> str:
    if not isinstance(value, str):
        raise _Invalid("Must be a string.")
    if len(value) > URL_MAX:
        raise _Invalid(f"Ensure this field has no more than {URL_MAX} characters.")
    try:
        validate_https_link(value)
    except Exception as err:  # DRF's ValidationError: its messages are the member's
        raise _Invalid(*[str(m) for m in getattr(err, "detail", [str(err)])]) from None
    return value


# type -> member -> check(widget, value) -> stored value
MEMBERS: dict[str, dict[str, Callable[[Widget, Any], Any]]] = {
    SEND_MESSAGE: {"text": lambda w, v: _text(w, v, canned=True)},
    ADD_NOTE: {"text": lambda w, v: _text(w, v, canned=False)},
    ADD_LABELS: {"labels": _labels},
    REMOVE_LABELS: {"labels": _labels},
    ASSIGN_AGENT: {"agent_id": _agent_id},
    ASSIGN_DEPARTMENT: {"department_id": _department_id},
    CLOSE: {},
    SEND_WEBHOOK: {"url": _url},
}


def validate_actions(*, widget: Widget, actions: Any, allow_webhook: bool) -> list[dict]:
    """The normalised list (what is stored): label names as the widget spells them, duplicates
    dropped. Raises the 422 `validation_failed` with `errors` keyed `actions`, `actions.<i>.<member>`
    (`actions.<i>.labels.<j>` for one name) on any fault; checks every action before answering."""
    if not isinstance(actions, list):
        raise ValidationFailed("One or more fields are invalid.", errors={"actions": ["Must be a list of actions."]})
    if not actions:
        raise ValidationFailed("One or more fields are invalid.", errors={"actions": ["At least one action."]})
    if len(actions) > MAX_ACTIONS:
        raise ValidationFailed(
            "One or more fields are invalid.", errors={"actions": [f"At most {MAX_ACTIONS} actions."]}
        )
    errors = unstorable_text(actions, "actions")
    if errors:
        raise ValidationFailed("One or more fields are invalid.", errors=errors)
    allowed = (*ACTION_TYPES, SEND_WEBHOOK) if allow_webhook else ACTION_TYPES
    normalised: list[dict] = []
    for index, action in enumerate(actions):
        path = f"actions.{index}"
        if not isinstance(action, dict):
            errors[path] = ['Must be an object: {"type": ..., its members}.']
            continue
        kind = action.get("type")
        if kind not in allowed:
            errors[f"{path}.type"] = ["Must be one of: " + ", ".join(allowed) + "."]
            continue
        members = MEMBERS[kind]
        for name in sorted(set(action) - {"type", *members}):
            errors[f"{path}.{name}"] = ["Unknown member."]
        stored: dict[str, Any] = {"type": kind}
        for name, check in members.items():
            if name not in action:
                errors[f"{path}.{name}"] = ["This field is required."]
                continue
            try:
                stored[name] = check(widget, action[name])
            except _Invalid as err:
                if err.messages:
                    errors[f"{path}.{name}"] = err.messages
                for suffix, messages in err.nested.items():
                    errors[f"{path}.{name}.{suffix}"] = messages
        normalised.append(stored)
    if errors:
        raise ValidationFailed("One or more fields are invalid.", errors=errors)
    return normalised


# --- running ----------------------------------------------------------------------------------------


def _send(*, widget: Widget, chat: Chat, actor: Agent | None, by: str, text: str, visibility: str) -> None:
    data = chat_services.MessageInput(body=text, visibility=visibility, origin=by)
    if actor is not None:
        chat_services.post_agent_message(widget=widget, chat=chat, agent=actor, data=data, source=by)
    else:
        chat_services.post_unattributed_message(widget=widget, chat=chat, data=data, source=by)


def _agent(widget: Widget, agent_id: int) -> Agent:
    agent = Agent.objects.filter(widget=widget, pk=agent_id).first()
    if agent is None:
        raise NotFound(f"Agent {agent_id} is not an agent of this widget.")
    if agent.status == Agent.Status.BANNED:
        raise ValidationFailed("The agent is banned.", errors={"agent_id": ["The agent is banned."]})
    return agent


def _department(widget: Widget, department_id: int) -> Department:
    department = Department.objects.filter(widget=widget, pk=department_id).first()
    if department is None:
        raise NotFound(f"Department {department_id} is not a department of this widget.")
    return department


def _run_one(
    *, widget: Widget, chat: Chat, action: dict, actor: Agent | None, by: str, webhook: WebhookHook | None
) -> None:
    kind = action.get("type")
    if kind == SEND_MESSAGE:
        chat = Chat.objects.select_related("contact", "agent").get(pk=chat.pk, widget=widget)
        text = canned_selectors.render_text_for_chat(widget=widget, chat=chat, text=action["text"], agent=actor)
        _send(widget=widget, chat=chat, actor=actor, by=by, text=text, visibility=Message.Visibility.PUBLIC)
    elif kind == ADD_NOTE:
        _send(widget=widget, chat=chat, actor=actor, by=by, text=action["text"], visibility=Message.Visibility.NOTE)
    elif kind == ADD_LABELS:
        chat_services.add_chat_labels(widget=widget, chat=chat, names=list(action["labels"]), by=by)
    elif kind == REMOVE_LABELS:
        chat_services.remove_chat_labels(widget=widget, chat=chat, names=list(action["labels"]), by=by)
    elif kind == ASSIGN_AGENT:
        agent = _agent(widget, action["agent_id"])
        current = Chat.objects.filter(pk=chat.pk, widget=widget).values_list("agent_id", flat=True).first()
        if current != agent.pk:  # already the chat's owner: nothing to change, nothing to emit
            chat_services.transfer_chat(widget=widget, chat=chat, to_agent=agent, source=by)
    elif kind == ASSIGN_DEPARTMENT:
        department = _department(widget, action["department_id"])
        chat_services.set_chat_department(widget=widget, chat=chat, department=department, by=by)
    elif kind == CLOSE:
        chat_services.close_chat(widget=widget, chat=chat, reason=by)
    elif kind == SEND_WEBHOOK and webhook is not None:
        webhook(chat, action)
    elif kind == SEND_WEBHOOK:
        raise ValidationFailed("send_webhook runs only in automation rules.", errors={"type": ["Not a macro action."]})
    else:
        raise ValidationFailed(f"Unknown action type {kind!r}.", errors={"type": ["Unknown action type."]})


def run_actions(
    *,
    widget: Widget,
    chat: Chat,
    actions: list[dict],
    actor: Agent | None,
    by: str,
    webhook: WebhookHook | None = None,
) -> int:
    """Run a stored (validated) list on `chat` in one transaction; returns how many ran (all).

    `actor`: the operator running a macro from the console (their messages and notes are theirs),
    or None (an API token, a rule). `by`: "macro" or "automation", the `by` of chat.assigned and of
    label changes and the `source` of messages. `webhook`: runs a `send_webhook` action (rules
    only); without it such an action is refused. The first refusal (any AppError a service raises)
    rolls back the earlier actions and raises MacroActionRefused; ids are re-read at run time, so an
    agent deleted or banned since the list was stored is a refusal, never a 500."""
    if by not in BY:
        raise AssertionError(f"by must be one of {BY}")
    if chat.widget_id != widget.pk or (actor is not None and actor.widget_id != widget.pk):
        raise AssertionError("chat and actor must belong to the widget")
    with transaction.atomic():
        for index, action in enumerate(actions):
            try:
                _run_one(widget=widget, chat=chat, action=action, actor=actor, by=by, webhook=webhook)
            except AppError as err:
                raise MacroActionRefused(
                    action_index=index,
                    action_type=str(action.get("type", "")),
                    code=err.code,
                    detail=err.detail,
                    errors=err.errors,
                ) from err
            except Chat.DoesNotExist:
                raise MacroActionRefused(
                    action_index=index,
                    action_type=str(action.get("type", "")),
                    code=NotFound.code,
                    detail="The chat no longer exists.",
                ) from None
    return len(actions)
