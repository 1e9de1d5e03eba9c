"""Reads of the erasure marks, for the apps that own contacts and chats.

The rule "a contact under erasure reads as missing" lives here once: every model whose rows belong
to a contact (contacts, chats, messages, and the rows that hang off a chat) takes `LiveQuerySet` as
its manager, names the path to its contact in `contact_path`, and is read through `.live()`.
"""

from __future__ import annotations

from django.db.models import Exists, OuterRef, QuerySet

from .models import PendingErasure


def not_erasing(contact_field: str = "contact_id") -> Exists:
    """A filter keeping rows whose contact (the column `contact_field`) has no accepted erasure.
    Reached through `LiveQuerySet.live()`; the models' querysets name the column."""
    return ~Exists(PendingErasure.objects.filter(contact_id=OuterRef(contact_field)))


class LiveQuerySet(QuerySet):
    """Rows of a model owned by a contact. `live()` keeps those whose contact has no accepted
    erasure, so a contact under erasure reads as missing from the moment its erasure commits.

    The default manager stays unfiltered on purpose: the erasure job, Django's related managers and
    cascades, the admin's own lookups and migrations must all see every row; the readers that serve
    a person's data call `live()` (tests/test_erasure_everywhere.py walks them)."""

    # The lookup from this model to its contact's id (`pk` on the contact itself).
    contact_path = "contact_id"

    def live(self) -> LiveQuerySet:
        return self.filter(not_erasing(self.contact_path))


def is_erasing(contact_id: int) -> bool:
    return PendingErasure.objects.filter(contact_id=contact_id).exists()
