"""Support writes: the audit of support actions (what it keeps of a text, its retention, confirming a reply)."""

from __future__ import annotations

import hashlib
from datetime import timedelta

from django.utils import timezone

from apps.chats.models import Message

from ..models import SUPPORT_REPLY_ORIGIN, SupportAction

# --- audit --------------------------------------------------------------------------------------------

AUDIT_RETENTION = timedelta(days=180)


def text_digest(text: str) -> tuple[str, int]:
    """What the audit keeps of a text: its SHA-256 and its length, never the text."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(), len(text)


def purge_audit(*, now=None) -> int:
    """Delete support actions older than 180 days (beat job)."""
    cutoff = (now or timezone.now()) - AUDIT_RETENTION
    deleted, _ = SupportAction.objects.filter(created_at__lt=cutoff).delete()
    return deleted


def recheck_action(row: SupportAction) -> SupportAction:
    """An unconfirmed reply (202) is confirmed once its message is seen stored in its chat."""
    if row.outcome != SupportAction.Outcome.PENDING or row.message_id is None:
        return row
    if Message.objects.filter(pk=row.message_id, widget_id=row.widget_id, origin=SUPPORT_REPLY_ORIGIN).exists():
        SupportAction.objects.filter(pk=row.pk, outcome=SupportAction.Outcome.PENDING).update(
            outcome=SupportAction.Outcome.OK, finished_at=timezone.now()
        )
        row.outcome = SupportAction.Outcome.OK
    return row
