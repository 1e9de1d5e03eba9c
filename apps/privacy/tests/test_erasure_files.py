"""A contact's files under erasure: from the moment the erasure is accepted they read as missing on
every route that serves or hands out a file (the files API, signed download URLs issued before,
attaching them to another chat, the support API's attachments), as its contact and chats do; a file
another chat shows, or a launcher icon, stays readable, as the erasure keeps it."""

from __future__ import annotations

import uuid
from urllib.parse import urlsplit

import pytest

from apps.chats import services as chats
from apps.chats.models import Chat, Message
from apps.chats.services import MessageInput
from apps.chats.tests.factories import ContactFactory
from apps.core.models import File
from apps.erasure.models import PendingErasure
from apps.privacy import services
from apps.widget.models import WidgetIcon
from tests.support.factories import AgentFactory
from tests.support.plugin import assert_problem

from .data import make_person

pytestmark = pytest.mark.django_db


def idem():
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"key-{uuid.uuid4().hex}"}


def erase(client, contact) -> None:
    assert client.post(f"/api/v1/contacts/{contact.guid}/erase", **idem()).status_code == 202


def download_path(client, file: File) -> str:
    """The signed download URL the files API redirects to (a path on this server)."""
    response = client.get(f"/api/v1/files/{file.pk}")
    assert response.status_code == 302, response.content
    return urlsplit(response["Location"]).path


def other_chat(widget) -> tuple[Chat, object]:
    contact = ContactFactory(widget=widget)
    chats.post_client_message(widget=widget, contact=contact, data=MessageInput(body="hi"))
    return Chat.objects.get(contact=contact), AgentFactory(widget=widget)


def test_the_contacts_files_read_as_missing_once_the_erasure_is_accepted(api, widget, client):
    person = make_person(widget, tag="fay")
    bystander = make_person(widget, tag="gus")
    owner = api()
    signed = {file.pk: download_path(owner, file) for file in person.files}
    assert all(client.get(path).status_code == 200 for path in signed.values())

    erase(owner, person.contact)

    # upload sent in the chat, the operator's file shown only in its chat, the unsent upload
    for file in person.files:
        assert_problem(owner.get(f"/api/v1/files/{file.pk}"), 404, "not_found")
        assert_problem(client.get(signed[file.pk]), 404, "not_found")
    # nothing was deleted yet: the erasure's worker has not run
    assert File.objects.filter(pk__in=[f.pk for f in person.files]).count() == 3
    # another contact's files are untouched
    for file in bystander.files:
        assert client.get(download_path(owner, file)).status_code == 200


def test_a_file_of_a_contact_under_erasure_cannot_be_sent_into_another_chat(api, widget):
    person = make_person(widget, tag="hal")
    chat, agent = other_chat(widget)
    owner = api()
    erase(owner, person.contact)
    for file in person.files:
        body = {"type": "file", "file": file.pk, "agent_id": agent.pk}
        problem = assert_problem(owner.post(f"/api/v1/chats/{chat.pk}/messages", body, format="json", **idem()), 422)
        assert "file" in problem["errors"]
    assert not Message.objects.filter(chat=chat, file__isnull=False).exists()


def test_a_file_another_chat_shows_and_a_launcher_icon_stay_readable(api, widget, client):
    person = make_person(widget, tag="ida")
    upload, staff_file, unsent = person.files
    chat, agent = other_chat(widget)
    chats.post_agent_message(
        widget=widget, chat=chat, agent=agent, data=MessageInput(type="file", file_id=staff_file.pk)
    )
    second = make_person(widget, tag="jon")
    icon_file = second.files[1]  # the operator's file, also the launcher icon
    WidgetIcon.objects.create(widget=widget, file=icon_file, image="icons/x.png", format="png", width=64, height=64)
    owner = api()
    erase(owner, person.contact)
    erase(owner, second.contact)

    assert client.get(download_path(owner, staff_file)).status_code == 200
    assert client.get(download_path(owner, icon_file)).status_code == 200
    assert_problem(owner.get(f"/api/v1/files/{upload.pk}"), 404, "not_found")
    assert_problem(owner.get(f"/api/v1/files/{unsent.pk}"), 404, "not_found")

    # what reads as missing is what the erasure deletes, and what stays readable stays
    for contact in (person.contact, second.contact):
        services.erase_contact(pending_id=PendingErasure.objects.get(contact_id=contact.pk).pk)
    assert set(
        File.objects.filter(pk__in=[f.pk for f in person.files + second.files]).values_list("pk", flat=True)
    ) == {
        staff_file.pk,
        icon_file.pk,
    }
