"""Writes of canned responses. Every rule the API states is enforced here or by the constraint of
the model: the shortcut's uniqueness is the database's, so two concurrent writers of one shortcut
end as one row and one 409, never a duplicate or a 500."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.audit import services as audit
from apps.core.models import Widget

from . import variables
from .errors import ShortcutTaken, UnknownVariable
from .models import CannedResponse

AUDIT = "canned_response"  # audit rows: canned_response.created, .changed, .deleted


def check_text(text: str) -> None:
    unknown = variables.unknown_variables(text)
    if unknown:
        raise UnknownVariable(
            "Unknown variable in the text: " + ", ".join(unknown),
            errors={"text": [f"Unknown variable {v}; one of {', '.join(variables.NAMES)}." for v in unknown]},
            offending=unknown,
            allowed=list(variables.NAMES),
        )


def _save(row: CannedResponse, **kwargs: Any) -> None:
    """Save in a savepoint: a shortcut taken meanwhile fails on the unique constraint and leaves the
    caller's transaction usable for the 409."""
    try:
        with transaction.atomic():
            row.save(**kwargs)
    except IntegrityError:
        raise ShortcutTaken(f"The shortcut {row.shortcut!r} is already used by another canned response.") from None


@transaction.atomic
def create_canned_response(
    *, widget: Widget, shortcut: str, title: str, text: str, language: str | None = None
) -> CannedResponse:
    check_text(text)
    row = CannedResponse(widget=widget, shortcut=shortcut, title=title, text=text, language=language)
    _save(row, force_insert=True)
    audit.record_row(widget=widget, target_type=AUDIT, target_id=row.pk, before=None, after=audit.values(row))
    return row


@transaction.atomic
def update_canned_response(*, widget: Widget, canned: CannedResponse, changes: dict[str, Any]) -> CannedResponse:
    """Merge `changes` (any of shortcut, title, text, language) into the row."""
    assert canned.widget_id == widget.pk
    if "text" in changes:
        check_text(changes["text"])
    row = CannedResponse.objects.select_for_update().get(pk=canned.pk, widget=widget)
    before = audit.values(row)
    for name in ("shortcut", "title", "text", "language"):
        if name in changes:
            setattr(row, name, changes[name])
    row.updated_at = timezone.now()
    _save(row)
    audit.record_row(widget=widget, target_type=AUDIT, target_id=row.pk, before=before, after=audit.values(row))
    return row


@transaction.atomic
def delete_canned_response(*, widget: Widget, canned: CannedResponse) -> None:
    assert canned.widget_id == widget.pk
    row = CannedResponse.objects.select_for_update().filter(pk=canned.pk, widget=widget).first()
    if row is None:
        return
    before = audit.values(row)
    row.delete()
    audit.record_row(widget=widget, target_type=AUDIT, target_id=canned.pk, before=before, after=None)
