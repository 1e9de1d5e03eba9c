"""Merging two contacts of a widget: the same person met twice (a chat on the site and an e-mail,
two devices before `setUser`) becomes one contact.

What moves: every row that points at the source contact. The chats app moves its own (chats,
visitor sessions, visitor uploads, tags, identity, attributes, name/e-mail/phone); the apps above
it move theirs in in-transaction handlers of `contact.merged` (apps.channels: the external ids of
messenger contacts; apps.stats: the contact copied onto each chat's facts), which run before the
source row is deleted. Rows that hang off a chat (messages, ratings, offline messages, routing,
SLA clocks) follow their chat. The webhook log keeps what was delivered.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from apps.audit.services import Actor, record
from apps.core import events
from apps.core.errors import Conflict, NotFound, ValidationFailed
from apps.core.models import Widget
from apps.erasure import selectors as erasure

from ..contact_input import ATTRIBUTES_MAX_BYTES, attributes_size
from ..models import Chat, Contact, ContactTag, VisitorSession, VisitorUpload
from .contacts import ATTRIBUTES_MAX_KEYS


class MergeIntoSelf(Conflict):
    """A contact cannot be merged into itself: name another contact in `into`."""

    code, title = "merge_into_self", "Merge into itself"


class MergeIdentityConflict(Conflict):
    """Both contacts are verified as different people (their external ids were each proven with the
    identity secret): they are not the same person, so they are not merged."""

    code, title = "merge_identity_conflict", "Contacts verified as different people"


def _lock(*, widget: Widget, pk: int) -> Contact:
    """The contact row, locked; a missing one (deleted by a merge that ran first) or one under
    erasure is NotFound."""
    contact = Contact.objects.select_for_update().filter(pk=pk, widget=widget).first()
    if contact is None or erasure.is_erasing(contact.pk):
        raise NotFound("No such contact.")
    return contact


def _merged_attributes(*, source: Contact, target: Contact) -> dict:
    """The source's attributes under the target's (the target's values win). New keys may not take
    the target past the visitor-side limit of ATTRIBUTES_MAX_KEYS keys, nor past
    ATTRIBUTES_MAX_BYTES: refused whole (422), as `set_attributes` refuses."""
    merged = {**source.attributes, **target.attributes}
    added = [key for key in source.attributes if key not in target.attributes]
    if added and len(merged) > ATTRIBUTES_MAX_KEYS:
        message = (
            f"Together the two contacts hold {len(merged)} attributes; a contact holds at most {ATTRIBUTES_MAX_KEYS}."
        )
        raise ValidationFailed("The contacts cannot be merged.", errors={"attributes": [message]})
    if added and attributes_size(merged) > ATTRIBUTES_MAX_BYTES:
        message = f"The merged attributes would exceed {ATTRIBUTES_MAX_BYTES} bytes."
        raise ValidationFailed("The contacts cannot be merged.", errors={"attributes": [message]})
    return merged


def _take_identity(*, source: Contact, target: Contact) -> list[str]:
    """The target keeps its verified id; without one it takes the source's verified id, else (an id
    the page only claimed) the source's claimed id when it has none. Two different verified ids
    are two proven people: MergeIdentityConflict. Returns the target's changed fields."""
    if source.verified_at is not None and target.verified_at is not None:
        raise MergeIdentityConflict(
            "Both contacts are verified as different people (different external ids); they cannot be merged."
        )
    if source.verified_at is not None:
        # The id names one contact per widget (a unique constraint): let the source go of it first.
        Contact.objects.filter(pk=source.pk).update(external_id="", verified_at=None)
        target.external_id, target.verified_at = source.external_id, source.verified_at
        return ["external_id", "verified_at"]
    if target.verified_at is None and not target.external_id and source.external_id:
        target.external_id = source.external_id
        return ["external_id"]
    return []


@transaction.atomic
def merge_contacts(*, widget: Widget, source: Contact, target: Contact, actor: Actor | None = None) -> Contact:
    """Merge `source` into `target` (both of `widget`) and delete `source`; returns the target.

    Both rows are locked in the order of their ids, so a merge of A into B racing one of B into A
    never deadlocks: the second waits, then finds its source gone (NotFound). Refusals change
    nothing: the same contact (MergeIntoSelf, 409), a missing, foreign or erased contact on either
    side (NotFound, 404), two different verified ids (MergeIdentityConflict, 409), attributes past
    the limits (422). Emits `contact.merged {from, into}` once and records one audit row (`actor`,
    else the request's)."""
    if source.pk == target.pk:
        raise MergeIntoSelf("A contact cannot be merged into itself.")
    locked = {pk: _lock(widget=widget, pk=pk) for pk in sorted((source.pk, target.pk))}
    source, target = locked[source.pk], locked[target.pk]

    merged = _merged_attributes(source=source, target=target)
    changed = _take_identity(source=source, target=target)
    if merged != target.attributes:
        target.attributes = merged
        changed.append("attributes")
    for field in ("name", "email", "phone", "locale"):
        if not getattr(target, field) and getattr(source, field):
            setattr(target, field, getattr(source, field))
            changed.append(field)
    target.updated_at = timezone.now()
    target.save(update_fields=[*changed, "updated_at"])

    chat_ids = list(Chat.objects.filter(widget=widget, contact=source).values_list("pk", flat=True))
    # Merged chats stay separate chats (several on one channel): marked, they are outside the
    # one-room-per-channel rule; the visitor's next message goes to the one with the latest message.
    Chat.objects.filter(pk__in=chat_ids).update(contact=target, merged_from=source.guid)
    VisitorSession.objects.filter(contact=source).update(contact=target)
    VisitorUpload.objects.filter(contact=source).update(contact=target)
    held = set(ContactTag.objects.filter(contact=target).values_list("name", flat=True))
    ContactTag.objects.filter(contact=source).exclude(name__in=held).update(contact=target)

    record(
        widget=widget,
        action="contact.merged",
        target_type="contact",
        target_id=target.guid,
        changes={"merged_from": {"from": source.guid, "to": target.guid}},
        actor=actor,
    )
    # The handlers above chats move their own rows now, while the source still exists.
    events.emit(
        widget,
        events.CONTACT_MERGED,
        objects={"source": source, "target": target, "chat_ids": chat_ids},
        **{"from": source.guid, "into": target.guid},
    )
    Contact.objects.filter(pk=source.pk).delete()  # what is left (tags the target had) goes with it
    return target
