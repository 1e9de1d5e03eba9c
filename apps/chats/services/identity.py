"""A person's identity on a widget (identity verification): which contact a visitor session speaks
for once the page names the person with `ChatWidget.setUser`.

A verified external id names one contact per widget (a unique constraint on the verified ids): a
session that proves it joins that contact, so the person's conversation follows them to every
device. An unverified id is a detail the page claimed, kept on the session's own contact, and
joins nothing. The HMAC check itself is the widget app's (`apps.widget.selectors`); this module
only moves sessions and writes contacts.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.core.models import Widget

from ..models import Contact, VisitorSession
from .contacts import check_attributes, set_attributes, update_contact


@dataclass(frozen=True)
class Identified:
    contact: Contact
    verified: bool
    # The session now speaks for another contact: the widget reloads its conversation.
    moved: bool


def get_verified_contact(*, widget: Widget, external_id: str) -> Contact | None:
    """The widget's contact with this verified external id (a contact under erasure reads as missing)."""
    return Contact.objects.live().filter(widget=widget, external_id=external_id, verified_at__isnull=False).first()


def _claim(*, widget: Widget, contact: Contact, external_id: str) -> bool:
    """Mark `contact` (locked, unverified) as the verified `external_id`; False when another
    request verified that id first (the unique constraint), in which case nothing changed."""
    try:
        with transaction.atomic():
            contact.external_id = external_id
            contact.verified_at = timezone.now()
            contact.updated_at = contact.verified_at
            contact.save(update_fields=["external_id", "verified_at", "updated_at"])
    except IntegrityError:
        contact.refresh_from_db(fields=["external_id", "verified_at", "updated_at"])
        return False
    return True


def _verified_target(*, widget: Widget, current: Contact, external_id: str) -> Contact:
    """The contact a session proving `external_id` joins: the one that already has it, else the
    session's own contact (when it is not another verified person's), else a new contact."""
    for _attempt in range(2):  # a concurrent first verification of the same id wins the race once
        found = get_verified_contact(widget=widget, external_id=external_id)
        if found is not None:
            return found
        if current.verified_at is None:
            if _claim(widget=widget, contact=current, external_id=external_id):
                return current
            continue
        try:
            with transaction.atomic():
                return Contact.objects.create(
                    widget=widget, external_id=external_id, verified_at=timezone.now(), locale=current.locale
                )
        except IntegrityError:
            continue
    found = get_verified_contact(widget=widget, external_id=external_id)
    if found is None:  # verified and then erased between the two reads: the caller may retry
        raise IntegrityError("verified contact vanished")
    return found


def _move_session(*, session: VisitorSession, contact: Contact) -> None:
    session.contact = contact
    VisitorSession.objects.filter(pk=session.pk).update(contact=contact)


@transaction.atomic
def identify_session(
    *,
    widget: Widget,
    session: VisitorSession,
    external_id: str,
    verified: bool,
    details: dict,
    attributes: dict | None = None,
) -> Identified:
    """`setUser` after the hash was checked (`verified`). Verified: the session joins the widget's
    contact with that verified id (made from the session's own contact when that is not verified
    as someone else, else a new one). Unverified: the id is kept on the session's contact as an
    unverified detail; a session of a verified person that names someone else unverified moves to a
    new contact, so an unproven claim never writes a verified person's contact. `details` (name,
    email, phone: the non-empty ones) and `attributes` (`set_attributes` rules) then go to the
    contact. All or nothing: a refused attribute leaves the session where it was."""
    if session.widget_id != widget.pk:
        raise AssertionError("session must belong to the widget")
    if attributes:
        check_attributes(attributes)
    session = VisitorSession.objects.select_for_update().select_related("contact").get(pk=session.pk, widget=widget)
    current = Contact.objects.select_for_update().get(pk=session.contact_id, widget=widget)
    if verified:
        target = _verified_target(widget=widget, current=current, external_id=external_id)
    elif current.verified_at is not None:
        if current.external_id == external_id:
            return Identified(contact=current, verified=False, moved=False)  # nothing proven, nothing written
        target = Contact.objects.create(widget=widget, external_id=external_id, locale=current.locale)
    else:
        target = current
        if current.external_id != external_id:
            current.external_id = external_id
            current.updated_at = timezone.now()
            current.save(update_fields=["external_id", "updated_at"])
    moved = target.pk != current.pk
    if moved:
        _move_session(session=session, contact=target)
    changes = {field: details[field] for field in ("name", "email", "phone") if details.get(field)}
    if changes:
        target = update_contact(widget=widget, contact=target, changes=changes, source="visitor")
    if attributes:
        target = set_attributes(widget=widget, contact=target, values=attributes, source="identity")
    return Identified(contact=target, verified=verified, moved=moved)


@transaction.atomic
def end_session(*, widget: Widget, session: VisitorSession) -> None:
    """`reset()` (and a refused `setUser` under `required`): the session ends; its token answers
    like an unknown one from now on. The contact and its conversation stay."""
    VisitorSession.objects.filter(pk=session.pk, widget=widget).delete()
