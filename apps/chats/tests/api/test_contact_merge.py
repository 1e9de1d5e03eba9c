"""POST /v1/contacts/{id}/merge and the service behind it: everything the source held moves to the
target, the source reads as 404, `contact.merged` once, the refusals change nothing."""

from __future__ import annotations

import json
import threading
import uuid
from datetime import timedelta

import pytest
from django.apps import apps as django_apps
from django.db import connection
from django.utils import timezone

from apps.audit.models import AuditEntry
from apps.channels.models import ExternalContact
from apps.chats import services as chats
from apps.chats.models import Chat, Contact, ContactTag, VisitorSession, VisitorUpload
from apps.chats.services import MessageInput
from apps.chats.tests.factories import ContactFactory
from apps.chats.visitor import services as visitor
from apps.core.errors import NotFound
from apps.erasure.models import PendingErasure
from apps.privacy import services as privacy
from apps.privacy.tests.data import fan_out, make_person, rows_of
from apps.stats.models import ChatFacts
from apps.webhooks.models import Delivery, Subscription
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

CONTACTS = "/api/v1/contacts"

# Every reference to a Contact and how a merge moves it. A new foreign key to Contact fails
# test_every_reference_to_a_contact_is_moved_by_the_merge until the merge moves it and it is listed.
MOVED_BY_MERGE = {
    "chats.ContactTag.contact": "merge_contacts (a tag the target has stays once)",
    "chats.VisitorUpload.contact": "merge_contacts",
    "chats.VisitorSession.contact": "merge_contacts",
    "chats.Chat.contact": "merge_contacts (marked merged_from)",
    "apps_channels.ExternalContact.contact": "apps.channels.handlers.move_external_contacts",
}


def idem():
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"key-{uuid.uuid4().hex}"}


def merge(client, source, into, **headers):
    guid = into.guid if isinstance(into, Contact) else into
    return client.post(f"{CONTACTS}/{source.guid}/merge", {"into": guid}, format="json", **{**idem(), **headers})


def test_every_reference_to_a_contact_is_moved_by_the_merge():
    found = set()
    for model in django_apps.get_models():
        for field in model._meta.get_fields():
            if field.is_relation and field.concrete and field.related_model is Contact:
                found.add(f"{model._meta.label}.{field.name}")
    assert found == set(MOVED_BY_MERGE), {
        "not moved (move it and list it)": sorted(found - set(MOVED_BY_MERGE)),
        "listed but gone": sorted(set(MOVED_BY_MERGE) - found),
    }


# --- what moves -------------------------------------------------------------------------------------


def test_merge_moves_chats_sessions_uploads_tags_and_external_ids_and_deletes_the_source(api, widget):
    source = make_person(widget, tag="src")
    target = make_person(widget, tag="dst")
    ContactTag.objects.create(widget=widget, contact=target.contact, name="vip-src")  # held by both
    ExternalContact.objects.create(widget=widget, channel="telegram", external_id="tg-1", contact=source.contact)
    sessions = VisitorSession.objects.filter(contact=source.contact).count()
    uploads = VisitorUpload.objects.filter(contact=source.contact).count()
    assert sessions and uploads

    response = merge(api(), source.contact, target.contact)

    assert response.status_code == 200, response.content
    assert response.json()["id"] == target.contact.guid
    assert response.json()["tags"] == ["vip-dst", "vip-src"]
    assert not Contact.objects.filter(pk=source.contact.pk).exists()
    rows = rows_of(source)  # nothing points at the source any more; its chats, messages and files stay
    assert (rows["contact"], rows["tags"], rows["sessions"], rows["uploads"]) == (0, 0, 0, 0)
    assert (rows["chats"], rows["messages"], rows["files"]) == (2, len(source.messages), 3)
    moved = Chat.objects.filter(pk__in=[c.pk for c in source.chats])
    assert {c.contact_id for c in moved} == {target.contact.pk}
    assert {c.merged_from for c in moved} == {source.contact.guid}
    assert VisitorSession.objects.filter(contact=target.contact).count() == sessions + 1
    assert VisitorUpload.objects.filter(contact=target.contact).count() == uploads * 2
    assert ExternalContact.objects.get(external_id="tg-1").contact_id == target.contact.pk
    facts = ChatFacts.objects.filter(chat_id__in=[c.pk for c in source.chats])
    assert {(f.contact_id, f.contact_guid) for f in facts} == {(target.contact.pk, target.contact.guid)}
    # every message, rating and note of the source's chats is now the target's
    assert Chat.objects.filter(contact=target.contact).count() == 4


def test_attributes_merge_with_the_target_winning_and_empty_fields_filled(api, widget):
    source = ContactFactory(
        widget=widget, name="Ann", email="ann@mail.example", phone="+7900", attributes={"plan": "free", "city": "Oslo"}
    )
    target = ContactFactory(widget=widget, name="Ann B.", email="", phone="", attributes={"plan": "pro"})

    body = merge(api(), source, target).json()

    assert body["attributes"] == {"plan": "pro", "city": "Oslo"}
    assert (body["name"], body["email"], body["phone"]) == ("Ann B.", "ann@mail.example", "+7900")


def test_more_than_fifty_attributes_together_is_422_and_changes_nothing(api, widget, captured_events):
    source = ContactFactory(widget=widget, attributes={f"s{i}": i for i in range(30)})
    target = ContactFactory(widget=widget, attributes={f"t{i}": i for i in range(30)})

    response = merge(api(), source, target)

    body = assert_problem(response, 422, "validation_failed")
    assert "at most 50" in body["errors"]["attributes"][0]
    assert Contact.objects.filter(pk=source.pk).exists()
    assert Contact.objects.get(pk=target.pk).attributes == target.attributes
    assert not [kind for kind, _ in captured_events() if kind == "contact.merged"]


def test_a_verified_source_gives_the_target_its_verified_id(api, widget):
    at = timezone.now() - timedelta(days=1)
    source = ContactFactory(widget=widget, external_id="user-7", verified_at=at)
    target = ContactFactory(widget=widget, external_id="claimed", verified_at=None)

    merge(api(), source, target)

    identity = api().get(f"{CONTACTS}/{target.guid}/identity").json()
    assert identity == {"external_id": "user-7", "verified": True, "verified_at": at.isoformat()}
    found = api().get(f"{CONTACTS}/by-external-id/user-7").json()
    assert found["id"] == target.guid


def test_an_unverified_id_fills_a_target_without_one_and_never_replaces_the_targets(api, widget):
    source = ContactFactory(widget=widget, external_id="claimed-1")
    bare = ContactFactory(widget=widget)
    merge(api(), source, bare)
    assert Contact.objects.get(pk=bare.pk).external_id == "claimed-1"

    other = ContactFactory(widget=widget, external_id="claimed-2")
    verified = ContactFactory(widget=widget, external_id="user-9", verified_at=timezone.now())
    merge(api(), other, verified)
    assert Contact.objects.get(pk=verified.pk).external_id == "user-9"


def test_two_different_verified_ids_are_409_merge_identity_conflict(api, widget):
    source = ContactFactory(widget=widget, external_id="user-1", verified_at=timezone.now())
    target = ContactFactory(widget=widget, external_id="user-2", verified_at=timezone.now())

    assert_problem(merge(api(), source, target), 409, "merge_identity_conflict")
    assert Contact.objects.get(pk=source.pk).external_id == "user-1"


def test_two_accounts_on_one_channel_are_409_merge_channel_conflict_and_change_nothing(api, widget):
    source, target = ContactFactory(widget=widget), ContactFactory(widget=widget)
    ExternalContact.objects.create(widget=widget, channel="telegram", external_id="tg-1", contact=source)
    ExternalContact.objects.create(widget=widget, channel="telegram", external_id="tg-2", contact=target)
    ExternalContact.objects.create(widget=widget, channel="vk", external_id="vk-1", contact=source)

    assert_problem(merge(api(), source, target), 409, "merge_channel_conflict")
    assert Contact.objects.filter(pk=source.pk).exists()
    assert ExternalContact.objects.get(external_id="vk-1").contact_id == source.pk


# --- the source afterwards ------------------------------------------------------------------------


def test_the_source_is_404_on_every_contacts_route(api, widget):
    source, target = ContactFactory(widget=widget), ContactFactory(widget=widget)
    merge(api(), source, target)
    client = api()
    guid = source.guid
    for response in (
        client.get(f"{CONTACTS}/{guid}"),
        client.patch(f"{CONTACTS}/{guid}", {"name": "x"}, format="json", **idem()),
        client.post(f"{CONTACTS}/{guid}/tags", {"tags": ["x"]}, format="json", **idem()),
        client.get(f"{CONTACTS}/{guid}/identity"),
        client.get(f"{CONTACTS}/{guid}/export"),
        client.post(f"{CONTACTS}/{guid}/erase", **idem()),
        merge(client, source, target),
    ):
        assert_problem(response, 404, "not_found")
    assert guid not in {row["id"] for row in client.get(CONTACTS).json()["data"]}


def test_the_webhook_event_is_emitted_once_and_the_audit_row_names_both(api, widget, captured_events):
    source, target = ContactFactory(widget=widget), ContactFactory(widget=widget)

    merge(api(name="crm sync"), source, target)

    merged = [data for kind, data in captured_events() if kind == "contact.merged"]
    assert merged == [{"from": source.guid, "into": target.guid, "button_guid": widget.button_guid}]
    row = AuditEntry.objects.get(widget=widget, action="contact.merged")
    assert (row.actor_type, row.actor_name, row.target_type, row.target_id) == (
        "token",
        "crm sync",
        "contact",
        target.guid,
    )
    assert row.changes == {"merged_from": {"from": source.guid, "to": target.guid}}


def test_a_subscription_to_contact_merged_gets_a_delivery(api, widget):
    Subscription.objects.create(widget=widget, url="https://receiver.example/hook", events=["contact.merged"])
    source, target = ContactFactory(widget=widget), ContactFactory(widget=widget)

    merge(api(), source, target)
    fan_out()

    [delivery] = Delivery.objects.filter(widget=widget)
    body = json.loads(delivery.body)
    assert body["type"] == "contact.merged"
    assert body["data"] == {"button_guid": widget.button_guid, "from": source.guid, "into": target.guid}


def test_the_exports_after_the_merge_show_the_target(api, widget):
    source = make_person(widget, tag="exa")
    target = make_person(widget, tag="exb")
    merge(api(), source.contact, target.contact)

    exported = json.loads(b"".join(api().get(f"{CONTACTS}/{target.contact.guid}/export").streaming_content))
    assert {chat["id"] for chat in exported["chats"]} >= {c.pk for c in source.chats}
    today = timezone.localdate()
    window = {"from": str(today - timedelta(days=1)), "to": str(today + timedelta(days=2)), "format": "jsonl"}
    body = b"".join(api().get("/api/v1/chats/export", window).streaming_content).decode()
    rows = {row["id"]: row for row in map(json.loads, body.splitlines())}
    assert {rows[c.pk]["contact_id"] for c in source.chats} == {target.contact.guid}
    assert source.contact.guid not in body


# --- refusals ---------------------------------------------------------------------------------------


def test_merging_into_itself_is_409_merge_into_self(api, widget):
    contact = ContactFactory(widget=widget)
    assert_problem(merge(api(), contact, contact), 409, "merge_into_self")


def test_a_missing_foreign_or_erased_target_is_404_and_changes_nothing(api, widget, other_widget, captured_events):
    source = ContactFactory(widget=widget)
    foreign = ContactFactory(widget=other_widget)
    erased = ContactFactory(widget=widget)
    privacy.request_contact_erasure(widget=widget, contact=erased)
    client = api()
    for into in ("0" * 32, foreign.guid, erased.guid):
        assert_problem(merge(client, source, into), 404, "not_found")
    assert Contact.objects.filter(pk=source.pk).exists()
    assert not [kind for kind, _ in captured_events() if kind == "contact.merged"]


def test_the_service_refuses_a_target_erased_after_it_was_read(widget):
    source, target = ContactFactory(widget=widget), ContactFactory(widget=widget)
    PendingErasure.objects.create(widget=widget, contact_id=target.pk)
    with pytest.raises(NotFound):
        chats.merge_contacts(widget=widget, source=source, target=target)


def test_a_bad_body_is_422_and_the_scope_is_contacts_write(api, widget):
    source, target = ContactFactory(widget=widget), ContactFactory(widget=widget)
    client = api()
    response = client.post(f"{CONTACTS}/{source.guid}/merge", {"into": "short"}, format="json", **idem())
    assert "into" in assert_problem(response, 422, "validation_failed")["errors"]
    assert_problem(merge(api(scopes=["contacts:read"]), source, target), 403, "missing_scope")
    response = client.post(f"{CONTACTS}/{source.guid}/merge", {"into": target.guid}, format="json")
    assert response.status_code == 400
    assert Contact.objects.filter(pk=source.pk).exists()


# --- erasure of the target ------------------------------------------------------------------------


def test_erasing_the_target_afterwards_removes_everything_both_held(api, widget):
    source = make_person(widget, tag="era")
    target = make_person(widget, tag="erb")
    merge(api(), source.contact, target.contact)

    assert api().post(f"{CONTACTS}/{target.contact.guid}/erase", **idem()).status_code == 202
    privacy.erase_contact(pending_id=PendingErasure.objects.get(contact_id=target.contact.pk).pk)

    assert set(rows_of(source).values()) == {0}
    assert set(rows_of(target).values()) == {0}
    assert not ChatFacts.objects.filter(chat_id__in=[c.pk for c in source.chats + target.chats]).exists()


# --- the visitor ------------------------------------------------------------------------------------


def test_the_visitors_next_message_goes_to_the_targets_chat_with_the_latest_message(widget):
    source_session, _ = visitor.start_session(widget=widget, name="Ann")
    target_session, _ = visitor.start_session(widget=widget, name="Ann B.")
    older = chats.post_client_message(
        widget=widget, contact=source_session.contact, data=MessageInput(body="first")
    ).chat
    newer = chats.post_client_message(
        widget=widget, contact=target_session.contact, data=MessageInput(body="later")
    ).chat
    source_contact = source_session.contact
    chats.merge_contacts(widget=widget, source=source_contact, target=target_session.contact)

    session = VisitorSession.objects.select_related("contact").get(pk=source_session.pk)
    assert session.contact_id == target_session.contact.pk
    message = chats.post_client_message(widget=widget, contact=session.contact, data=MessageInput(body="again"))
    assert message.chat_id == newer.pk
    assert Chat.objects.filter(contact=session.contact, channel="widget").count() == 2  # both stay
    # the older chat with a later message is the room again
    Chat.objects.filter(pk=older.pk).update(last_message_at=timezone.now() + timedelta(minutes=1))
    assert chats.find_room(widget=widget, contact=session.contact).pk == older.pk


# --- concurrency (PostgreSQL) ----------------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_to_b_racing_b_to_a_ends_with_one_contact_and_no_deadlock(make_token, widget):
    from rest_framework.test import APIClient

    for _round in range(3):
        a, b = ContactFactory(widget=widget), ContactFactory(widget=widget)
        chats.post_client_message(widget=widget, contact=a, data=MessageInput(body="a"))
        chats.post_client_message(widget=widget, contact=b, data=MessageInput(body="b"))
        token = make_token(widget, ["contacts:write"])
        barrier = threading.Barrier(2)
        statuses = []
        lock = threading.Lock()

        def run(source, into):
            client = APIClient()
            client.raise_request_exception = False
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
            try:
                barrier.wait(timeout=30)
                status = merge(client, source, into).status_code
                with lock:
                    statuses.append(status)
            finally:
                connection.close()

        threads = [threading.Thread(target=run, args=pair) for pair in ((a, b), (b, a))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)

        assert not any(thread.is_alive() for thread in threads), "a merge hung"
        assert sorted(statuses) == [200, 404]
        [left] = Contact.objects.filter(pk__in=[a.pk, b.pk])
        assert Chat.objects.filter(contact=left).count() == 2
