"""Identity verification in the visitor API (product-decisions.md, "The widget as the owner's
platform"): POST identity (`setUser`), DELETE sessions (`reset()`), PATCH attributes
(`setAttributes`), under the widget's `identity_verification` setting."""

import hashlib
import hmac
import json
import logging
from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone

from apps.chats.models import Contact, VisitorSession
from apps.chats.tests.test_visitor_api import get, post, room_of, say, start, url
from apps.widget import services as widget_services
from apps.widget.models import IdentitySecret
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db


def sign(secret: str, external_id: str) -> str:
    return hmac.new(secret.encode(), external_id.encode(), hashlib.sha256).hexdigest()


def configure(widget, mode: str) -> None:
    widget_services.update_settings(widget=widget, body={"identity_verification": mode})


@pytest.fixture
def secret(widget) -> str:
    return widget_services.rotate_identity_secret(widget=widget)[0]


def identify(client, widget, token, **body):
    return post(client, widget, "identity", body, token)


def patch_attributes(client, widget, token, body):
    return client.patch(
        url(widget, "attributes"),
        json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Visitor {token}",
    )


def end(client, widget, token):
    return client.delete(url(widget, "sessions"), HTTP_AUTHORIZATION=f"Visitor {token}")


def session_contact(token) -> Contact:
    from apps.chats.visitor.auth import hash_token

    return VisitorSession.objects.select_related("contact").get(token_hash=hash_token(token)).contact


def snapshot():
    """Every contact and session as stored, to prove a refusal changed nothing."""
    contacts = list(
        Contact.objects.order_by("pk").values(
            "pk", "name", "email", "phone", "attributes", "external_id", "verified_at", "updated_at"
        )
    )
    sessions = list(VisitorSession.objects.order_by("pk").values("pk", "contact_id"))
    return contacts, sessions


# --- a right hash joins the person's one contact ----------------------------------------------------------


@pytest.mark.parametrize("mode", ["optional", "required"])
def test_a_right_hash_verifies_the_sessions_own_contact(client, widget, secret, mode):
    configure(widget, mode)
    first = start(client, widget)
    response = identify(client, widget, first["session_token"], id="user-42", hash=sign(secret, "user-42"), name="Ann")
    assert response.status_code == 200, response.content
    assert response.json() == {"verified": True, "contact_id": first["client_id"]}
    contact = Contact.objects.get(guid=first["client_id"])
    assert (contact.external_id, contact.name) == ("user-42", "Ann")
    assert contact.verified_at is not None


def test_a_second_device_joins_the_same_contact_and_sees_the_history(client, widget, secret):
    configure(widget, "optional")
    laptop = start(client, widget)["session_token"]
    identify(client, widget, laptop, id="user-42", hash=sign(secret, "user-42"))
    say(client, widget, laptop, "Written on the laptop")
    phone = start(client, widget)
    response = identify(client, widget, phone["session_token"], id="user-42", hash=sign(secret, "user-42"))
    body = response.json()
    assert body["verified"] is True
    assert body["contact_id"] != phone["client_id"]
    assert body["contact_id"] == session_contact(laptop).guid
    messages = get(client, widget, "messages", phone["session_token"]).json()["data"]
    assert [m["body"] for m in messages] == ["Written on the laptop"]


def test_the_hash_of_another_id_does_not_verify(client, widget, secret):
    configure(widget, "optional")
    token = start(client, widget)["session_token"]
    response = identify(client, widget, token, id="user-42", hash=sign(secret, "user-43"))
    assert response.json()["verified"] is False
    contact = session_contact(token)
    assert (contact.external_id, contact.verified_at) == ("user-42", None)


def test_under_optional_a_wrong_hash_keeps_the_details_unverified_and_joins_nothing(client, widget, secret):
    configure(widget, "optional")
    owner = start(client, widget)["session_token"]
    identify(client, widget, owner, id="user-42", hash=sign(secret, "user-42"))
    stranger = start(client, widget)
    response = identify(client, widget, stranger["session_token"], id="user-42", hash="0" * 64, email="x@example.com")
    assert response.json() == {"verified": False, "contact_id": stranger["client_id"]}
    contact = Contact.objects.get(guid=stranger["client_id"])
    assert (contact.external_id, contact.verified_at, contact.email) == ("user-42", None, "x@example.com")
    assert session_contact(owner).email == ""


def test_under_off_even_a_right_hash_is_an_unverified_detail(client, widget, secret):
    token = start(client, widget)["session_token"]
    assert identify(client, widget, token, id="user-42", hash=sign(secret, "user-42")).json()["verified"] is False
    assert session_contact(token).verified_at is None


def test_an_unverified_claim_moves_a_verified_session_off_the_persons_contact(client, widget, secret):
    configure(widget, "optional")
    token = start(client, widget)["session_token"]
    identify(client, widget, token, id="user-42", hash=sign(secret, "user-42"))
    verified = session_contact(token)
    response = identify(client, widget, token, id="user-43", name="Mallory")
    assert response.json()["verified"] is False
    assert session_contact(token).pk != verified.pk
    verified.refresh_from_db()
    assert (verified.external_id, verified.name) == ("user-42", "")


def test_a_verified_session_naming_another_person_gets_that_persons_contact(client, widget, secret):
    configure(widget, "optional")
    token = start(client, widget)["session_token"]
    identify(client, widget, token, id="alice", hash=sign(secret, "alice"))
    alice = session_contact(token)
    response = identify(client, widget, token, id="bob", hash=sign(secret, "bob"))
    bob = Contact.objects.get(guid=response.json()["contact_id"])
    assert bob.pk != alice.pk
    assert (bob.external_id, alice.external_id) == ("bob", "alice")
    assert bob.verified_at is not None


# --- the secret's overlap on rotation ---------------------------------------------------------------------


def test_the_previous_secret_verifies_for_24_hours_then_ends(client, widget, secret):
    configure(widget, "optional")
    widget_services.rotate_identity_secret(widget=widget)
    token = start(client, widget)["session_token"]
    assert identify(client, widget, token, id="u1", hash=sign(secret, "u1")).json()["verified"] is True
    later = timezone.now() + timedelta(hours=24, seconds=1)
    with mock.patch("django.utils.timezone.now", return_value=later):
        other = start(client, widget)["session_token"]
        assert identify(client, widget, other, id="u2", hash=sign(secret, "u2")).json()["verified"] is False


def test_a_second_rotation_ends_the_oldest_secret_at_once(client, widget, secret):
    configure(widget, "optional")
    widget_services.rotate_identity_secret(widget=widget)
    newest = widget_services.rotate_identity_secret(widget=widget)[0]
    token = start(client, widget)["session_token"]
    assert identify(client, widget, token, id="u1", hash=sign(secret, "u1")).json()["verified"] is False
    assert identify(client, widget, token, id="u1", hash=sign(newest, "u1")).json()["verified"] is True


def test_the_secret_is_stored_encrypted(widget, secret):
    row = IdentitySecret.objects.get(widget=widget)
    assert secret not in row.secret_encrypted


# --- required: refusals change nothing ----------------------------------------------------------------------


@pytest.mark.parametrize("hash_", [None, "", "0" * 64, "not hex at all", "ü" * 10])
def test_under_required_a_wrong_or_missing_hash_is_401_and_ends_the_session(client, widget, secret, hash_):
    configure(widget, "required")
    token = start(client, widget, name="Ann")["session_token"]
    contact = session_contact(token)
    contacts_before, _ = snapshot()
    body = {"id": "user-42", "name": "Mallory"} | ({"hash": hash_} if hash_ is not None else {})
    assert_problem(post(client, widget, "identity", body, token), 401, "identity_unverified")
    assert snapshot()[0] == contacts_before
    assert not VisitorSession.objects.filter(contact=contact).exists()
    assert_problem(say(client, widget, token), 401, "invalid_visitor_session")


def test_under_required_anonymous_visitors_still_chat(client, widget, secret):
    configure(widget, "required")
    token = start(client, widget)["session_token"]
    assert say(client, widget, token).status_code == 201


def test_under_required_a_hash_for_another_id_is_refused(client, widget, secret):
    configure(widget, "required")
    token = start(client, widget)["session_token"]
    before = snapshot()[0]
    assert_problem(
        identify(client, widget, token, id="user-42", hash=sign(secret, "admin")), 401, "identity_unverified"
    )
    assert snapshot()[0] == before


def test_without_any_secret_nothing_verifies(client, widget):
    configure(widget, "required")
    token = start(client, widget)["session_token"]
    assert_problem(identify(client, widget, token, id="u", hash=sign("guess", "u")), 401, "identity_unverified")


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"id": ""},
        {"id": "   "},
        {"id": "x" * 129},
        {"id": 42},
        {"id": "u", "hash": 5},
        {"id": "u", "extra": 1},
        {"id": "u", "attributes": {"Bad Key": 1}},
        {"id": "u", "attributes": {"k": None}},
        {"id": "u", "attributes": []},
    ],
)
def test_bad_identity_bodies_are_422_and_change_nothing(client, widget, secret, body):
    configure(widget, "optional")
    token = start(client, widget)["session_token"]
    before = snapshot()
    assert_problem(post(client, widget, "identity", body, token), 422, "validation_failed")
    assert snapshot() == before


def test_a_refused_attribute_undoes_the_whole_identity_call(client, widget, secret):
    configure(widget, "optional")
    owner = start(client, widget)["session_token"]
    identify(client, widget, owner, id="user-42", hash=sign(secret, "user-42"))
    token = start(client, widget)["session_token"]
    before = snapshot()
    body = {"id": "user-42", "hash": sign(secret, "user-42"), "attributes": {"note": "x" * 501}}
    problem = assert_problem(post(client, widget, "identity", body, token), 422, "validation_failed")
    assert list(problem["errors"]) == ["note"]
    assert snapshot() == before


def test_identity_needs_a_session(client, widget):
    assert_problem(post(client, widget, "identity", {"id": "u"}), 401, "visitor_session_required")


# --- reset() -------------------------------------------------------------------------------------------------


def test_reset_ends_the_session_and_keeps_the_conversation(client, widget, secret):
    configure(widget, "optional")
    token = start(client, widget)["session_token"]
    identify(client, widget, token, id="user-42", hash=sign(secret, "user-42"))
    say(client, widget, token, "Hi")
    contact = session_contact(token)
    assert end(client, widget, token).status_code == 204
    assert_problem(get(client, widget, "messages", token), 401, "invalid_visitor_session")
    assert room_of(contact).pk  # the person's conversation stays for their next login
    again = start(client, widget)["session_token"]
    assert get(client, widget, "messages", again).json()["data"] == []
    response = identify(client, widget, again, id="user-42", hash=sign(secret, "user-42"))
    assert response.json()["contact_id"] == contact.guid


def test_reset_needs_a_session(client, widget):
    assert_problem(client.delete(url(widget, "sessions")), 401, "visitor_session_required")


# --- setAttributes ----------------------------------------------------------------------------------------------


def test_attributes_merge_into_the_contact(client, widget):
    token = start(client, widget)["session_token"]
    patch_attributes(client, widget, token, {"plan": "pro", "seats": 3})
    response = patch_attributes(client, widget, token, {"trial": False, "seats": 4.5})
    assert response.status_code == 200, response.content
    assert response.json() == {"attributes": {"plan": "pro", "seats": 4.5, "trial": False}}
    assert session_contact(token).attributes == {"plan": "pro", "seats": 4.5, "trial": False}


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ({"Plan": "x"}, "Plan"),
        ({"a" * 41: "x"}, "a" * 41),
        ({"with-dash": 1}, "with-dash"),
        ({"ok": "x" * 501}, "ok"),
        ({"ok": None}, "ok"),
        ({"ok": {"nested": 1}}, "ok"),
        ({"ok": [1, 2]}, "ok"),
    ],
)
def test_a_bad_attribute_refuses_the_whole_call(client, widget, body, key):
    token = start(client, widget)["session_token"]
    before = snapshot()
    problem = assert_problem(patch_attributes(client, widget, token, {"fine": "yes", **body}), 422, "validation_failed")
    assert list(problem["errors"]) == [key]
    assert snapshot() == before


def test_a_value_of_exactly_500_characters_and_a_key_of_40_are_taken(client, widget):
    token = start(client, widget)["session_token"]
    response = patch_attributes(client, widget, token, {"k" * 40: "v" * 500})
    assert response.status_code == 200


def test_at_most_50_attributes_per_contact(client, widget):
    token = start(client, widget)["session_token"]
    assert patch_attributes(client, widget, token, {f"k{i}": i for i in range(49)}).status_code == 200
    before = snapshot()
    problem = assert_problem(patch_attributes(client, widget, token, {"k0": 1, "x": 1, "y": 2}), 422)
    assert sorted(problem["errors"]) == ["x", "y"]
    assert snapshot() == before
    assert patch_attributes(client, widget, token, {"k0": "changed", "x": 1}).status_code == 200
    assert len(session_contact(token).attributes) == 50


def test_attributes_body_must_be_an_object(client, widget):
    token = start(client, widget)["session_token"]
    assert_problem(patch_attributes(client, widget, token, ["a"]), 422, "validation_failed")


def test_under_required_an_unverified_session_may_not_set_attributes(client, widget, secret):
    configure(widget, "required")
    token = start(client, widget)["session_token"]
    before = snapshot()
    assert_problem(patch_attributes(client, widget, token, {"plan": "pro"}), 401, "identity_unverified")
    assert snapshot() == before
    identify(client, widget, token, id="user-42", hash=sign(secret, "user-42"))
    assert patch_attributes(client, widget, token, {"plan": "pro"}).status_code == 200


def test_identity_attributes_follow_the_same_rules(client, widget, secret):
    configure(widget, "optional")
    token = start(client, widget)["session_token"]
    body = {"id": "user-42", "hash": sign(secret, "user-42"), "attributes": {"plan": "pro"}}
    assert post(client, widget, "identity", body, token).status_code == 200
    assert session_contact(token).attributes == {"plan": "pro"}


# --- the config and the logs ----------------------------------------------------------------------------------


def test_the_config_carries_the_mode(client, widget):
    assert get(client, widget, "config").json()["identity_verification"] == "off"
    configure(widget, "required")
    body = get(client, widget, "config").json()
    assert body["identity_verification"] == "required"
    assert body["settings"]["identity_verification"] == "required"


def test_the_secret_never_reaches_the_logs(client, widget, caplog):
    configure(widget, "optional")
    caplog.set_level(logging.DEBUG)
    secret = widget_services.rotate_identity_secret(widget=widget)[0]
    token = start(client, widget)["session_token"]
    assert identify(client, widget, token, id="user-42", hash=sign(secret, "user-42")).json()["verified"] is True
    assert caplog.records, "the requests were logged"
    for record in caplog.records:
        text = record.getMessage() + " " + json.dumps(record.__dict__, default=str)
        assert secret not in text
        assert secret[len("idsec_") :] not in text


# --- concurrency (PostgreSQL) ----------------------------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_devices_verifying_one_id_at_once_all_join_one_contact(widget):
    import threading

    from django.db import connection
    from django.test import Client

    configure(widget, "optional")
    secret = widget_services.rotate_identity_secret(widget=widget)[0]
    tokens = [start(Client(), widget)["session_token"] for _ in range(6)]
    barrier = threading.Barrier(len(tokens))
    answers, lock = [], threading.Lock()

    def verify(token):
        try:
            barrier.wait(timeout=30)
            response = identify(Client(), widget, token, id="user-42", hash=sign(secret, "user-42"))
            with lock:
                answers.append((response.status_code, response.json()))
        finally:
            connection.close()

    threads = [threading.Thread(target=verify, args=(token,)) for token in tokens]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "a request hung"
    assert [status for status, _ in answers] == [200] * len(tokens)
    assert {body["contact_id"] for _, body in answers} == {
        Contact.objects.get(widget=widget, external_id="user-42", verified_at__isnull=False).guid
    }
    assert {session_contact(token).guid for token in tokens} == {answers[0][1]["contact_id"]}


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_attribute_writes_never_pass_50_keys(widget):
    import threading

    from django.db import connection
    from django.test import Client

    token = start(Client(), widget)["session_token"]
    assert patch_attributes(Client(), widget, token, {f"k{i}": i for i in range(45)}).status_code == 200
    writers = 6
    barrier = threading.Barrier(writers)
    statuses, lock = [], threading.Lock()

    def write(n):
        try:
            barrier.wait(timeout=30)
            response = patch_attributes(Client(), widget, token, {f"w{n}_a": 1, f"w{n}_b": 2})
            with lock:
                statuses.append(response.status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "a writer hung"
    assert sorted(statuses) == [200, 200] + [422] * (writers - 2)
    assert len(session_contact(token).attributes) == 49
