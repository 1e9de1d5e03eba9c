"""Erasure of a contact: POST /v1/contacts/{guid}/erase, the worker, and what stays."""

from __future__ import annotations

import json
import uuid

import pytest
from django.apps import apps as django_apps
from django.db import models

from apps.ai.models import DemandSignal
from apps.audit.models import AuditEntry
from apps.chats import services as chats
from apps.chats.models import Chat, Contact, Message
from apps.chats.services import MessageInput
from apps.chats.tests.factories import ContactFactory, MessageFactory
from apps.core.models import File, OutboxEvent
from apps.erasure.models import PendingErasure
from apps.privacy import services
from apps.privacy.models import StoredBytesDeletion
from apps.stats.models import DailyAgentFacts, DailyWidgetFacts
from apps.webhooks.models import Attempt, Delivery
from tests.support.admin import staff_client
from tests.support.factories import AgentFactory
from tests.support.plugin import assert_problem

from .data import make_person, rows_of, subscribe

pytestmark = pytest.mark.django_db


def idem():
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"key-{uuid.uuid4().hex}"}


def erase(client, guid, **headers):
    return client.post(f"/api/v1/contacts/{guid}/erase", **{**idem(), **headers})


def run_pending(contact) -> dict | None:
    mark = PendingErasure.objects.get(contact_id=contact.pk)
    return services.erase_contact(pending_id=mark.pk)


def rollups() -> list:
    widget_rows = list(DailyWidgetFacts.objects.order_by("pk").values())
    agent_rows = list(DailyAgentFacts.objects.order_by("pk").values())
    return [widget_rows, agent_rows]


# --- every model that can refer to a person is handled ------------------------------------------------

# model label.field -> what an erasure does to the rows (checked against the field's on_delete).
# A new model with a reference to a contact, chat or message fails until it is listed here (and
# the erasure handles it: a CASCADE row goes with its contact, chat or message in the batches).
HANDLED: dict[str, object] = {
    "chats.ContactTag.contact": models.CASCADE,
    "chats.VisitorUpload.contact": models.CASCADE,  # the File rows are deleted by the erasure
    "chats.VisitorSession.contact": models.CASCADE,  # deleted when the erasure is accepted
    "chats.Chat.contact": models.CASCADE,
    "chats.Chat.last_message": models.SET_NULL,  # the chat goes too
    "chats.Message.chat": models.CASCADE,
    "chats.ChatTransfer.chat": models.CASCADE,
    "chats.Rating.chat": models.CASCADE,
    "chats.ChatLabel.chat": models.CASCADE,  # the chat's labels go with it (the widget's labels stay)
    "ai.ReplyClaim.chat": models.CASCADE,
    "ai.ReplyClaim.message": models.CASCADE,
    "ai.ReplyClaim.reply": models.SET_NULL,
    "support.SupportClaim.chat": models.CASCADE,
    "support.Ticket.chat": models.CASCADE,
    "support.Ticket.opening_message": models.SET_NULL,
    "support.ChatAccount.chat": models.CASCADE,
    "compat.CompatBotHandoff.chat": models.CASCADE,
    "compat.ClientMessage.chat": models.CASCADE,
    "compat.ClientMessage.message": models.CASCADE,
    # an endpoint's call carrying a message (a compat bot's CLIENT_MESSAGE) goes with the message
    "webhooks.Delivery.message": models.CASCADE,
    "stats.ChatFacts.chat": models.CASCADE,  # per-chat facts; the daily rollups stay
    "routing.ChatRouting.chat": models.CASCADE,  # the chat's place in the queue and its assignments
    "routing.SlaClock.chat": models.CASCADE,  # its SLA clocks; the statistics count only existing chats
    "apps_channels.ExternalContact.contact": models.CASCADE,
    # the call's webhooks.Delivery (an endpoint delivery: its body holds the message) is redacted
    # before the message is deleted
    "external.Call.chat": models.CASCADE,
    "external.Call.message": models.CASCADE,
    # a mention shows its note: it goes with the chat and the note
    "mentions.Mention.chat": models.CASCADE,
    "mentions.Mention.message": models.CASCADE,
}


def _references() -> dict[str, object]:
    targets = {Contact, Chat, Message}
    found = {}
    for model in django_apps.get_models():
        for field in model._meta.get_fields():
            if field.is_relation and field.concrete and field.related_model in targets:
                found[f"{model._meta.label}.{field.name}"] = field.remote_field.on_delete
    return found


def test_every_reference_to_a_contact_chat_or_message_is_handled_by_the_erasure():
    found = _references()
    assert set(found) == set(HANDLED), {
        "not handled (add to HANDLED and to the erasure)": sorted(set(found) - set(HANDLED)),
        "listed but gone": sorted(set(HANDLED) - set(found)),
    }
    assert {name: found[name] for name in found} == HANDLED


# --- the API -------------------------------------------------------------------------------------


def test_erase_answers_202_queued_and_hides_the_contact_and_its_chats_at_once(api, widget):
    person = make_person(widget, tag="ann")
    client = api()
    response = erase(client, person.contact.guid)
    assert response.status_code == 202 and response.json() == {"status": "queued"}
    assert PendingErasure.objects.filter(contact_id=person.contact.pk).exists()
    assert_problem(client.get(f"/api/v1/contacts/{person.contact.guid}"), 404, "not_found")
    for chat in person.chats:
        assert_problem(client.get(f"/api/v1/chats/{chat.pk}"), 404, "not_found")
        assert_problem(client.get(f"/api/v1/chats/{chat.pk}/messages"), 404, "not_found")
        assert_problem(client.get(f"/api/v1/chats/{chat.pk}/transcript"), 404, "not_found")
    listed = client.get("/api/v1/chats").json()["data"]
    assert not {row["id"] for row in listed} & {chat.pk for chat in person.chats}
    assert person.contact.guid not in {row["id"] for row in client.get("/api/v1/contacts").json()["data"]}
    assert_problem(client.get(f"/api/v1/contacts/{person.contact.guid}/export"), 404, "not_found")


def test_erase_ends_the_visitor_sessions_when_accepted(api, widget):
    person = make_person(widget, tag="bea")
    assert erase(api(), person.contact.guid).status_code == 202
    assert rows_of(person)["sessions"] == 0


def test_a_second_erase_of_the_same_guid_is_404(api, widget):
    contact = ContactFactory(widget=widget)
    client = api()
    assert erase(client, contact.guid).status_code == 202
    assert_problem(erase(client, contact.guid), 404, "not_found")
    run_pending(contact)
    assert_problem(erase(client, contact.guid), 404, "not_found")


def test_erase_records_one_audit_row_with_the_token_as_actor(api, widget, make_token):
    contact = ContactFactory(widget=widget)
    assert erase(api(name="dpo tool"), contact.guid).status_code == 202
    row = AuditEntry.objects.get(widget=widget, action="contact.erased")
    assert (row.actor_type, row.actor_name, row.target_type, row.target_id) == (
        "token",
        "dpo tool",
        "contact",
        contact.guid,
    )


def test_erase_rules(api, widget, other_widget, assert_problem):
    contact = ContactFactory(widget=widget)
    foreign = ContactFactory(widget=other_widget)
    assert_problem(_anonymous_erase(contact), 401)
    assert_problem(erase(api(scopes=["contacts:read", "contacts:write"]), contact.guid), 403, "missing_scope")
    assert_problem(erase(api(), foreign.guid), 404, "not_found")
    assert_problem(erase(api(), "0" * 32), 404, "not_found")
    response = api().post(f"/api/v1/contacts/{contact.guid}/erase")
    assert_problem(response, 400)
    assert not PendingErasure.objects.exists()


def _anonymous_erase(contact):
    from rest_framework.test import APIClient

    return erase(APIClient(), contact.guid)


def test_erase_with_a_reused_idempotency_key_is_409_and_queues_nothing_more(api, widget):
    contact = ContactFactory(widget=widget)
    client = api()
    headers = idem()
    assert client.post(f"/api/v1/contacts/{contact.guid}/erase", **headers).status_code == 202
    assert_problem(client.post(f"/api/v1/contacts/{contact.guid}/erase", **headers), 409, "idempotency_key_reused")
    assert PendingErasure.objects.filter(contact_id=contact.pk).count() == 1


# --- the worker ----------------------------------------------------------------------------------------


def test_the_worker_erases_every_row_file_and_log_body_of_the_contact_and_nothing_else(
    api, widget, captured_events, settings, tmp_path, django_capture_on_commit_callbacks
):
    settings.MEDIA_ROOT = tmp_path
    subscribe(widget)
    person = make_person(widget, tag="cleo")
    bystander = make_person(widget, tag="dora")
    storage = File._meta.get_field("stored").storage
    assert all(storage.exists(name) for name in person.stored_names)
    assert Delivery.objects.filter(body__contains="cleo@mail.example").exists()
    before_rollups = rollups()
    bystander_rows = rows_of(bystander)

    assert erase(api(), person.contact.guid).status_code == 202
    with django_capture_on_commit_callbacks(execute=False) as after_commit:
        result = run_pending(person.contact)
    assert all(storage.exists(name) for name in person.stored_names)  # bytes go after the commit only
    for callback in after_commit:
        callback()

    assert set(rows_of(person).values()) == {0}
    assert not PendingErasure.objects.exists()
    assert not any(storage.exists(name) for name in person.stored_names)
    assert not StoredBytesDeletion.objects.exists()
    erased_ids = {
        Contact: [person.contact.pk],
        Chat: [chat.pk for chat in person.chats],
        Message: [message.pk for message in person.messages],
    }
    for model in django_apps.get_models():  # every table that can refer to the person is empty of them
        for field in model._meta.get_fields():
            if field.is_relation and field.concrete and field.related_model in erased_ids:
                left = model._default_manager.filter(**{f"{field.attname}__in": erased_ids[field.related_model]})
                assert not left.exists(), f"{model._meta.label}.{field.name}"
    assert result["chats"] == 2 and result["files"] == 3, result
    for word in person.words:
        for model, fields in ((Delivery, ("body",)), (Attempt, ("response_excerpt",))):
            for name in fields:
                assert not model.objects.filter(**{f"{name}__contains": word}).exists(), (model, word)
        assert word not in json.dumps(list(Delivery.objects.values_list("payload", flat=True)), ensure_ascii=False)
        assert word not in json.dumps(list(OutboxEvent.objects.values_list("data", flat=True)), ensure_ascii=False)
    assert not OutboxEvent.objects.filter(data__client_id=person.contact.guid).exists()
    assert rollups() == before_rollups
    assert rows_of(bystander) == bystander_rows
    assert Delivery.objects.filter(body__contains="dora@mail.example").exists()
    assert all(storage.exists(name) for name in bystander.stored_names)
    erased = [data for kind, data in captured_events() if kind == "contact.erased"]
    assert erased == [{"contact_id": person.contact.guid, "button_guid": widget.button_guid}]


def test_a_file_another_contact_was_sent_too_stays(api, widget):
    person = make_person(widget, tag="eve")
    other = ContactFactory(widget=widget)
    shared = person.files[1]  # the operator's file
    chats.post_client_message(widget=widget, contact=other, data=MessageInput(body="hi"))
    chat = Chat.objects.get(contact=other)
    chats.post_agent_message(
        widget=widget, chat=chat, agent=AgentFactory(widget=widget), data=MessageInput(type="file", file_id=shared.pk)
    )
    assert erase(api(), person.contact.guid).status_code == 202
    run_pending(person.contact)
    assert File.objects.filter(pk=shared.pk).exists()
    assert not File.objects.filter(pk__in=[person.files[0].pk, person.files[2].pk]).exists()


def test_a_run_killed_halfway_leaves_nothing_readable_and_the_next_run_finishes(
    api, widget, captured_events, monkeypatch
):
    person = make_person(widget, tag="fay", messages=12)
    assert erase(api(), person.contact.guid).status_code == 202
    mark = PendingErasure.objects.get(contact_id=person.contact.pk)
    real, calls = services._delete_files, []

    def dies_on_the_third_batch(**kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise SystemExit("worker killed")
        return real(**kwargs)

    monkeypatch.setattr(services, "_delete_files", dies_on_the_third_batch)
    with pytest.raises(SystemExit):
        services.erase_contact(pending_id=mark.pk, batch_size=2)
    monkeypatch.setattr(services, "_delete_files", real)

    left = rows_of(person)
    assert 0 < left["messages"] < len(person.messages) and left["contact"] == 1
    client = api()
    assert_problem(client.get(f"/api/v1/contacts/{person.contact.guid}"), 404)
    assert_problem(client.get(f"/api/v1/chats/{person.chats[0].pk}/messages"), 404)
    assert not [kind for kind, _ in captured_events() if kind == "contact.erased"]

    services.erase_contact(pending_id=mark.pk, batch_size=2)
    assert set(rows_of(person).values()) == {0}
    assert services.erase_contact(pending_id=mark.pk) is None
    assert [kind for kind, _ in captured_events() if kind == "contact.erased"] == ["contact.erased"]


def test_no_write_brings_a_contact_under_erasure_back(api, widget):
    person = make_person(widget, tag="gia")
    agent = AgentFactory(widget=widget)
    assert erase(api(), person.contact.guid).status_code == 202
    count = Message.objects.filter(chat__contact=person.contact).count()
    with pytest.raises(Chat.DoesNotExist):  # a visitor message in flight
        chats.post_client_message(widget=widget, contact=person.contact, data=MessageInput(body="still here?"))
    with pytest.raises(Chat.DoesNotExist):  # an AI or operator answer in flight
        chats.post_agent_message(widget=widget, chat=person.chats[0], agent=agent, data=MessageInput(body="yes"))
    with pytest.raises(Chat.DoesNotExist):  # a first message on a new channel
        chats.post_client_message(widget=widget, contact=person.contact, data=MessageInput(body="new"), channel="vk")
    with pytest.raises(Chat.DoesNotExist):  # a rating, a claim: every chat write locks the chat
        chats.lock_chat(widget=widget, chat=person.chats[0])
    assert Message.objects.filter(chat__contact=person.contact).count() == count
    assert not Chat.objects.filter(contact=person.contact, channel="vk").exists()


def test_a_message_that_committed_during_the_batches_is_erased_by_the_last_step(api, widget, monkeypatch):
    person = make_person(widget, tag="hal")
    assert erase(api(), person.contact.guid).status_code == 202
    real = services._delete_uploads
    late = []

    def a_message_arrives_meanwhile(**kwargs):
        if not late:  # the write whose lock was taken before the erasure was accepted
            late.append(MessageFactory(chat=person.chats[0], body="late message of hal"))
        return real(**kwargs)

    monkeypatch.setattr(services, "_delete_uploads", a_message_arrives_meanwhile)
    run_pending(person.contact)
    assert not Message.objects.filter(pk=late[0].pk).exists()
    assert set(rows_of(person).values()) == {0}


def test_admin_action_queues_the_same_erasure(admin_client, widget):
    contact = ContactFactory(widget=widget)
    response = admin_client.post(
        "/admin/chats/contact/", {"action": "erase", "_selected_action": [contact.pk]}, follow=True
    )
    assert response.status_code == 200
    mark = PendingErasure.objects.get(contact_id=contact.pk)
    assert mark.source == "admin"
    row = AuditEntry.objects.get(widget=widget, action="contact.erased")
    assert (row.actor_type, row.actor_name) == ("staff", "admin")


def test_a_redacted_delivery_cannot_be_redelivered(api, widget):
    subscribe(widget)
    person = make_person(widget, tag="ivy")
    Delivery.objects.update(status=Delivery.Status.DELIVERED)
    assert erase(api(), person.contact.guid).status_code == 202
    run_pending(person.contact)
    redacted = Delivery.objects.filter(payload={"erased": True}, envelope="native").first()
    assert redacted is not None
    response = api().post(
        f"/api/v1/webhook-subscriptions/{redacted.subscription_id}/redeliver",
        {"delivery_id": str(redacted.delivery_id)},
        format="json",
        **idem(),
    )
    assert response.status_code in (409, 422), response.content
    assert not Delivery.objects.filter(redelivery_of=redacted).exists()


def test_resume_queues_only_erasures_whose_job_went_quiet(widget, monkeypatch):
    from datetime import timedelta

    from django.utils import timezone

    queued = []
    monkeypatch.setattr(services, "_queue", queued.append)
    long_ago = timezone.now() - timedelta(hours=2)
    quiet = PendingErasure.objects.create(widget=widget, contact_id=1, requested_at=long_ago, last_run_at=long_ago)
    PendingErasure.objects.create(widget=widget, contact_id=2, requested_at=long_ago, last_run_at=timezone.now())
    PendingErasure.objects.create(widget=widget, contact_id=3)
    assert services.resume_erasures() == 1 and queued == [quiet.pk]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_visitor_messages_racing_the_erasure_never_outlive_it(widget):
    from tests.support.concurrency import race

    contact = ContactFactory(widget=widget)
    chats.post_client_message(widget=widget, contact=contact, data=MessageInput(body="first"))

    def visitor(n):
        def work():
            try:
                chats.post_client_message(widget=widget, contact=contact, data=MessageInput(body=f"racing {n}"))
            except Chat.DoesNotExist:
                return "refused"
            return "stored"

        return work

    def accept():
        services.request_contact_erasure(widget=widget, contact=contact)  # the worker runs on commit (eager)
        return "accepted"

    results = race([*(visitor(n) for n in range(6)), accept])
    assert results[-1] == "accepted" and set(results[:-1]) <= {"stored", "refused"}, results
    for mark in PendingErasure.objects.all():
        services.erase_contact(pending_id=mark.pk)
    assert not Contact.objects.filter(pk=contact.pk).exists()
    assert not Chat.objects.filter(contact_id=contact.pk).exists()
    assert not Message.objects.filter(body__startswith="racing").exists()


def test_a_write_that_meets_the_erasure_after_its_lookup_answers_404_not_500(widget):
    from apps.core.errors import exception_handler

    # a request found the chat, then the contact's erasure was accepted before its write locked it
    response = exception_handler(Chat.DoesNotExist("Chat matching query does not exist."), {})

    assert response.status_code == 404
    assert response.data["code"] == "not_found"


# --- demand signals: what visitors asked that the AI could not answer ---------------------------------


def test_the_worker_forgets_the_demand_signals_of_the_contacts_questions_and_keeps_the_others(api, widget):
    person = make_person(widget, tag="erin")
    bystander = make_person(widget, tag="fay")
    for someone in (person, bystander):
        chats.await_human(widget=widget, chat=someone.chats[1], reason="marker")
    samples = set(DemandSignal.objects.filter(widget=widget).values_list("sample", flat=True))
    assert samples == {"telegram erin", "telegram fay"}

    assert erase(api(), person.contact.guid).status_code == 202
    run_pending(person.contact)

    assert list(DemandSignal.objects.filter(widget=widget).values_list("sample", flat=True)) == ["telegram fay"]
    listed = api(scopes=["ai:read"]).get("/api/v1/ai/demand-signals").json()["data"]
    assert "erin" not in json.dumps(listed)


def test_a_redelivered_endpoint_call_carrying_a_message_goes_with_the_message(api, widget):
    from apps.core.crypto import encrypt_secret
    from apps.webhooks import services as webhooks

    person = make_person(widget, tag="gia")
    message = person.messages[0]
    endpoint = webhooks.create_endpoint(
        widget=widget,
        owner="custom",
        owner_id=1,
        url="https://receiver.example/ch",
        secret_encrypted=encrypt_secret("s" * 32),
    )
    call = webhooks.enqueue_call(
        endpoint=endpoint,
        event_type="message",
        body=b'{"text": "my secret gia 0"}',
        key=uuid.uuid4(),
        message_id=message.pk,
    )
    Delivery.objects.filter(pk=call.pk).update(status=Delivery.Status.DELIVERED)
    call.refresh_from_db()
    copy = webhooks.redeliver_endpoint_call(widget=widget, original=call)

    assert erase(api(), person.contact.guid).status_code == 202
    run_pending(person.contact)

    assert not Delivery.objects.filter(pk__in=[call.pk, copy.pk]).exists()
    assert not Delivery.objects.filter(body__contains="my secret gia").exists()


# --- Django admin --------------------------------------------------------------------------------------


def _staff_client(*codenames):
    from django.contrib.auth.models import Permission
    from django.test import Client

    from tests.support.factories import UserFactory

    user = UserFactory(is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="chats", codename__in=codenames))
    client = Client()
    client.force_login(user)
    return client


def _admin_erase(client, contact):
    return client.post(
        "/admin/chats/contact/", {"action": "erase", "_selected_action": [contact.pk], "index": 0}, follow=False
    )


def test_staff_who_may_only_view_contacts_cannot_erase_one_in_admin(widget):
    contact = ContactFactory(widget=widget)
    client = _staff_client("view_contact")
    assert client.get("/admin/chats/contact/").status_code == 200
    _admin_erase(client, contact)
    assert not PendingErasure.objects.filter(contact_id=contact.pk).exists()


def test_staff_who_may_change_contacts_erase_one_in_admin(widget):
    contact = ContactFactory(widget=widget)
    _admin_erase(staff_client("chats", "view_contact", "change_contact", account_of=widget), contact)
    assert PendingErasure.objects.get(contact_id=contact.pk).source == PendingErasure.Source.ADMIN
