"""Reads of the erasure marks, for the apps that own contacts and chats."""

from __future__ import annotations

from django.db.models import Exists, OuterRef

from .models import PendingErasure


def not_erasing(contact_field: str = "contact_id") -> Exists:
    """A filter keeping rows whose contact (the column `contact_field`) has no accepted erasure.

    Used by every read and every locking write of contacts and chats, so a contact under erasure
    reads as missing from the moment its erasure commits."""
    return ~Exists(PendingErasure.objects.filter(contact_id=OuterRef(contact_field)))


def is_erasing(contact_id: int) -> bool:
    return PendingErasure.objects.filter(contact_id=contact_id).exists()
