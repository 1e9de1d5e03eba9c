"""GET /v1/contacts/{guid}/export: one streamed JSON document of what the API shows about a contact."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone
from rest_framework.test import APIClient

from apps.chats.models import Contact, Message
from tests.support.plugin import assert_problem

from .data import make_person

pytestmark = pytest.mark.django_db


def export(client, guid):
    return client.get(f"/api/v1/contacts/{guid}/export")


def document(response) -> dict:
    import json

    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    assert response.streaming
    return json.loads(b"".join(response.streaming_content))


def without_url(payload: dict) -> dict:
    return {key: value for key, value in payload.items() if key != "url"}


def test_export_holds_exactly_what_the_api_shows_of_the_contact(api, widget, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    person = make_person(widget, tag="ida")
    other = make_person(widget, tag="jon")  # another contact of the same widget
    client = api()

    doc = document(export(client, person.contact.guid))

    assert set(doc) == {"exported_at", "links_expire_at", "contact", "identity", "chats", "files"}
    assert doc["contact"] == client.get(f"/api/v1/contacts/{person.contact.guid}").json()
    assert doc["identity"] == client.get(f"/api/v1/contacts/{person.contact.guid}/identity").json()
    assert [chat["id"] for chat in doc["chats"]] == [chat.pk for chat in person.chats]
    for chat in doc["chats"]:
        shown = client.get(f"/api/v1/chats/{chat['id']}").json()
        assert {k: v for k, v in chat.items() if k not in ("messages", "ratings")} == shown
        listed = client.get(f"/api/v1/chats/{chat['id']}/messages?limit=100").json()["data"]
        public = [m for m in reversed(listed) if m["visibility"] == "public"]
        assert [without_url(m) for m in chat["messages"]] == [without_url(m) for m in public]
    assert doc["chats"][0]["ratings"] == [
        {
            "value": 4,
            "comment": "thanks ida",
            "agent_id": doc["chats"][0]["ratings"][0]["agent_id"],
            "created_at": doc["chats"][0]["ratings"][0]["created_at"],
        }
    ]
    assert doc["chats"][1]["ratings"] == []
    text = str(doc)
    assert "private note on ida" not in text  # an operator note is never exported
    # nothing of another contact (its own values: "jon" alone can turn up inside a random token)
    others = [*other.words, other.contact.guid, "passport-jon", "unsent-jon", "vip-jon", "shop.example/jon"]
    assert [value for value in others if value.lower() in text.lower()] == []
    note_ids = set(Message.objects.filter(visibility="note").values_list("pk", flat=True))
    assert not note_ids & {m["id"] for chat in doc["chats"] for m in chat["messages"]}
    assert sorted(f["id"] for f in doc["files"]) == sorted(f.pk for f in person.files)


def test_each_file_link_works_for_one_hour_and_not_after(api, widget, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    person = make_person(widget, tag="kim")
    doc = document(export(api(), person.contact.guid))
    links = [f["url"] for f in doc["files"]]
    assert links and all(link for link in links)
    anonymous = APIClient()
    with time_machine.travel(timezone.now() + timedelta(minutes=59)):
        for link in links:
            assert anonymous.get(link).status_code == 200
    with time_machine.travel(timezone.now() + timedelta(minutes=61)):
        for link in links:
            assert anonymous.get(link).status_code == 404


def test_export_rules(api, widget, other_widget):
    person = make_person(widget, tag="lea")
    foreign = make_person(other_widget, tag="max")
    assert_problem(export(APIClient(), person.contact.guid), 401)
    assert_problem(export(api(scopes=["chats:read", "messages:read"]), person.contact.guid), 403, "missing_scope")
    assert_problem(export(api(), foreign.contact.guid), 404, "not_found")
    assert_problem(export(api(), "f" * 32), 404, "not_found")
    assert document(export(api(scopes=["contacts:read"]), person.contact.guid))["contact"]["id"] == person.contact.guid


def test_a_third_contact_export_while_two_are_in_flight_is_429_and_a_finished_one_frees_its_slot(
    api, widget, other_widget
):
    person = make_person(widget, tag="lea")
    client = api(scopes=["contacts:read"])
    first, second = export(client, person.contact.guid), export(client, person.contact.guid)  # open, unread
    refused = export(client, person.contact.guid)
    assert_problem(refused, 429, "rate_limited")
    assert refused["Retry-After"] == "10"
    foreign = make_person(other_widget, tag="max")  # another widget's exports are its own
    assert document(export(api(w=other_widget, scopes=["contacts:read"]), foreign.contact.guid))
    assert document(first)["contact"]["id"] == person.contact.guid  # read to the end: its slot is free
    assert document(export(client, person.contact.guid))["contact"]["id"] == person.contact.guid
    document(second)


def test_export_carries_the_verified_identity(api, widget):
    person = make_person(widget, tag="uma")
    Contact.objects.filter(pk=person.contact.pk).update(external_id="uma-7", verified_at=timezone.now())
    doc = document(export(api(), person.contact.guid))
    assert (doc["identity"]["external_id"], doc["identity"]["verified"]) == ("uma-7", True)
    assert doc["identity"]["verified_at"]
