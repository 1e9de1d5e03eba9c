"""Labels: the widget's set of names (`/api/v1/labels`) and the labels each chat carries.

Names are stored as given (NFC, trimmed) and compared by `label_key`: NFC and case-folded, so
`Refund`, `REFUND` and `refund` are one label, and a decomposed `é` is the composed one. Every
change of a chat's labels, whoever makes it (an operator, the API, a macro, a rule, a label
deleted), emits `chat.labels_changed {chat_id, labels}` once, with the chat's names after the
change, and only when the set changed.
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Iterable

from django.db import IntegrityError, transaction
from rest_framework.exceptions import ValidationError

from apps.audit import services as audit
from apps.core import events
from apps.core.api.serializers import validate_input
from apps.core.errors import ValidationFailed, flatten_errors
from apps.core.models import Widget

from ..errors import LabelTaken, TooManyLabels, UnknownLabel
from ..label_input import MAX_LABELS_PER_CHAT, ChatLabelsInput
from ..models import Chat, ChatLabel, Label
from .locking import lock_chat

logger = logging.getLogger(__name__)

BY = frozenset({"agent", "api", "macro", "automation"})
AUDIT = "label"  # audit rows: label.created, .changed, .deleted


def clean_name(name: str) -> str:
    """A label name as stored: NFC, surrounding whitespace removed."""
    return unicodedata.normalize("NFC", name).strip()


def label_key(name: str) -> str:
    """What two names are compared by: NFC, case-folded (folding may decompose, hence NFC again)."""
    return unicodedata.normalize("NFC", clean_name(name).casefold())


def sort_names(names: Iterable[str]) -> list[str]:
    return sorted(names, key=lambda name: (label_key(name), name))


# --- a chat's labels -------------------------------------------------------------------------------------


def check_chat_label_names(names: list) -> list[str]:
    """`names` read by the rules of PUT /v1/chats/{id}/labels (at most MAX_LABELS_PER_CHAT names of
    1 to 50 characters), for callers outside the REST API (the console's label picker); a bad one
    raises the API's 422 with its messages by field (`labels.0`)."""
    try:
        return validate_input(ChatLabelsInput, {"labels": names})["labels"]
    except ValidationError as exc:
        raise ValidationFailed("One or more fields are invalid.", errors=flatten_errors(exc.detail)) from None


def _resolve(widget: Widget, names: list[str]) -> list[Label]:
    """The widget's labels named by `names` (duplicates collapse); an unknown or malformed name is
    a 422 naming its entry (`labels.<index>`)."""
    if not isinstance(names, list | tuple):
        raise ValidationFailed("One or more fields are invalid.", errors={"labels": ["Must be a list of names."]})
    keys: dict[int, str] = {}
    errors: dict[str, list[str]] = {}
    for index, name in enumerate(names):
        if not isinstance(name, str) or not clean_name(name):
            errors[f"labels.{index}"] = ["Must be a label name."]
        else:
            keys[index] = label_key(name)
    by_key = {label.key: label for label in Label.objects.filter(widget=widget, key__in=set(keys.values()))}
    unknown = []
    for index, key in keys.items():
        if key not in by_key:
            errors[f"labels.{index}"] = [f"This widget has no label named “{clean_name(names[index])}”."]
            unknown.append(clean_name(names[index]))
    if errors:
        if unknown and len(unknown) == len(errors):
            raise UnknownLabel("Unknown label: " + ", ".join(unknown) + ".", errors=errors)
        raise ValidationFailed("One or more fields are invalid.", errors=errors)
    return list({label.pk: label for label in (by_key[key] for key in keys.values())}.values())


def _change(*, widget: Widget, chat: Chat, names: list[str], by: str, mode: str) -> list[str]:
    if by not in BY:
        raise ValueError(f"by must be one of {sorted(BY)}, got {by!r}")
    wanted = _resolve(widget, names)
    chat = lock_chat(widget=widget, chat=chat, related=())
    current = {row.label_id: row.label for row in ChatLabel.objects.filter(chat=chat).select_related("label")}
    if mode == "set":
        after = {label.pk: label for label in wanted}
    elif mode == "add":
        after = {**current, **{label.pk: label for label in wanted}}
    else:
        gone = {label.pk for label in wanted}
        after = {pk: label for pk, label in current.items() if pk not in gone}
    if len(after) > MAX_LABELS_PER_CHAT:
        raise TooManyLabels(
            f"A chat carries at most {MAX_LABELS_PER_CHAT} labels.",
            errors={"labels": [f"A chat carries at most {MAX_LABELS_PER_CHAT} labels."]},
        )
    removed = set(current) - set(after)
    added = set(after) - set(current)
    labels = sort_names(label.name for label in after.values())
    if not removed and not added:
        return labels
    if removed:
        ChatLabel.objects.filter(chat=chat, label_id__in=removed).delete()
    if added:
        ChatLabel.objects.bulk_create([ChatLabel(widget=widget, chat=chat, label_id=pk) for pk in sorted(added)])
    events.emit(widget, events.CHAT_LABELS_CHANGED, objects={"chat": chat}, chat_id=chat.pk, labels=labels)
    logger.info("chat labels changed", extra={"widget_id": widget.pk, "chat_id": chat.pk, "by": by})
    return labels


@transaction.atomic
def set_chat_labels(*, widget: Widget, chat: Chat, names: list[str], by: str) -> list[str]:
    """Replace the chat's labels with `names` (the widget's labels, compared in NFC without regard
    to case). Returns the chat's label names, sorted without regard to case. Locks the chat row, so
    two writers of one chat's labels serialise and each emits only a change it made. A name the
    widget has no label for is UnknownLabel (422); more than MAX_LABELS_PER_CHAT is TooManyLabels
    (422); nothing changes then. `by`: agent, api, macro or automation."""
    return _change(widget=widget, chat=chat, names=names, by=by, mode="set")


@transaction.atomic
def add_chat_labels(*, widget: Widget, chat: Chat, names: list[str], by: str) -> list[str]:
    """Put the labels `names` on the chat, keeping the others (as `set_chat_labels`)."""
    return _change(widget=widget, chat=chat, names=names, by=by, mode="add")


@transaction.atomic
def remove_chat_labels(*, widget: Widget, chat: Chat, names: list[str], by: str) -> list[str]:
    """Take the labels `names` off the chat; a label the chat does not carry changes nothing, an
    unknown name is still UnknownLabel (as `set_chat_labels`)."""
    return _change(widget=widget, chat=chat, names=names, by=by, mode="remove")


# --- the widget's labels ------------------------------------------------------------------------------------


def _save(label: Label, **kwargs) -> None:
    """Save in a savepoint: a name taken meanwhile fails on the unique constraint and leaves the
    caller's transaction usable for the 409."""
    label.name = clean_name(label.name)
    label.key = label_key(label.name)
    try:
        with transaction.atomic():
            label.save(**kwargs)
    except IntegrityError:
        raise LabelTaken(
            f"This widget already has a label named “{label.name}”.",
            errors={"name": ["A label of this name already exists (names are compared without regard to case)."]},
        ) from None


def _audited(label: Label) -> dict:
    return {"name": label.name, "color": label.color}


@transaction.atomic
def create_label(*, widget: Widget, name: str, color: str = "") -> Label:
    label = Label(widget=widget, name=name, color=color or "")
    _save(label, force_insert=True)
    audit.record_row(widget=widget, target_type=AUDIT, target_id=label.pk, before=None, after=_audited(label))
    return label


@transaction.atomic
def update_label(*, widget: Widget, label: Label, changes: dict) -> Label:
    """Rename and/or recolour (`changes`: name, color; color None or "" clears it). A rename is
    not a change of any chat's set of labels: it emits no chat.labels_changed."""
    label = Label.objects.select_for_update().get(pk=label.pk, widget=widget)
    before = _audited(label)
    if "name" in changes:
        label.name = changes["name"]
    if "color" in changes:
        label.color = changes["color"] or ""
    _save(label)
    audit.record_row(widget=widget, target_type=AUDIT, target_id=label.pk, before=before, after=_audited(label))
    return label


@transaction.atomic
def delete_label(*, widget: Widget, label: Label) -> None:
    """Delete the label and take it off every chat: each chat that carried it emits
    chat.labels_changed with its remaining labels, as if an operator had removed it (a consumer
    mirroring labels learns of the change; chats are locked in id order, as every writer would)."""
    label = Label.objects.select_for_update().filter(pk=label.pk, widget=widget).first()
    if label is None:
        return
    chat_ids = sorted(ChatLabel.objects.filter(widget=widget, label=label).values_list("chat_id", flat=True))
    before = _audited(label)
    for chat_id in chat_ids:
        try:
            chat = lock_chat(widget=widget, chat=Chat(pk=chat_id), related=())
        except Chat.DoesNotExist:
            continue  # under erasure: its rows go with the label, nothing is announced about it
        ChatLabel.objects.filter(chat=chat, label=label).delete()
        names = sort_names(ChatLabel.objects.filter(chat=chat).values_list("label__name", flat=True))
        events.emit(widget, events.CHAT_LABELS_CHANGED, objects={"chat": chat}, chat_id=chat.pk, labels=names)
    pk = label.pk
    label.delete()
    audit.record_row(widget=widget, target_type=AUDIT, target_id=pk, before=before, after=None)
