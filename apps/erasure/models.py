"""Contacts accepted for erasure and not yet erased.

This app sits at the bottom of the layers so that the chats app, which owns the contact and its
chats, can hide a contact the moment its erasure is accepted (the erasure itself runs in
apps.privacy, above every app whose rows it removes). The row names the contact by its id only, so
no layer above is imported; it is deleted in the transaction that deletes the contact.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class PendingErasure(models.Model):
    """One contact whose erasure was accepted: from this row on, its contact and chats answer 404
    and no service writes into them."""

    class Source(models.TextChoices):
        API = "api"
        ADMIN = "admin"

    widget = models.ForeignKey("core.Widget", on_delete=models.CASCADE, related_name="+")
    contact_id = models.BigIntegerField(unique=True)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.API)
    requested_at = models.DateTimeField(default=timezone.now)
    # Runs of the erasure job that started on this row (a run after a crash continues the work).
    runs = models.PositiveIntegerField(default=0)
    # Moved by a running job as it goes: a mark whose job went quiet is queued again.
    last_run_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["requested_at"], name="pending_erasure_requested")]

    def __str__(self) -> str:
        return f"erasure of contact {self.contact_id} (widget {self.widget_id})"
