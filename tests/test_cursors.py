"""List cursors: opaque (no internal value can be read out of them) and bound to one list of one
widget (another widget's cursor is refused exactly like a forged one)."""

import base64
import binascii
import zlib

import pytest

from apps.chats.tests.factories import ContactFactory
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

CONTACTS = "/api/v1/contacts"
NOTES = "/api/v1/_test/notes"


def readable_forms(cursor: str) -> list[bytes]:
    """Everything a client could read out of a cursor without a key: the text, each base64 piece
    decoded, and each decoded piece decompressed."""
    forms = [cursor.encode()]
    for piece in cursor.replace(":", ".").split("."):
        try:
            decoded = base64.urlsafe_b64decode(piece + "=" * (-len(piece) % 4))
        except (binascii.Error, ValueError):
            continue
        forms.append(decoded)
        try:
            forms.append(zlib.decompress(decoded))
        except zlib.error:
            pass
    return forms


def test_a_contacts_cursor_does_not_reveal_the_numeric_contact_id(api, widget):
    # given contacts with a distinctive numeric id (the spec never exposes it)
    ContactFactory(widget=widget, id=987654321)
    ContactFactory(widget=widget, id=987654322)
    # when
    cursor = api().get(CONTACTS, {"limit": 1}).json()["next_cursor"]
    # then
    assert cursor
    for form in readable_forms(cursor):
        assert b"98765432" not in form, form


def test_another_widgets_cursor_is_refused_like_a_forged_one(api, widget, other_widget):
    # given a cursor issued to the other widget for the same list
    for owner in (widget, other_widget):
        ContactFactory.create_batch(3, widget=owner)
    foreign = api(w=other_widget).get(CONTACTS, {"limit": 1}).json()["next_cursor"]
    assert foreign
    # when
    refused = assert_problem(api().get(CONTACTS, {"cursor": foreign}), 422, "validation_failed")
    forged = assert_problem(api().get(CONTACTS, {"cursor": "forged"}), 422, "validation_failed")
    # then
    assert refused["errors"] == forged["errors"] == {"cursor": ["Invalid cursor."]}
    assert refused["detail"] == forged["detail"]


def test_a_cursor_of_another_list_of_the_same_widget_is_refused(api, widget):
    from tests.testapp.models import Note

    ContactFactory.create_batch(3, widget=widget)
    for i in range(3):
        Note.objects.create(widget=widget, title=str(i))
    client = api()
    cursor = client.get(CONTACTS, {"limit": 1}).json()["next_cursor"]
    body = assert_problem(client.get(NOTES, {"cursor": cursor}), 422, "validation_failed")
    assert body["errors"] == {"cursor": ["Invalid cursor."]}


def test_a_cursor_still_pages_for_its_own_widget_with_another_token(api, widget):
    ContactFactory.create_batch(3, widget=widget)
    cursor = api().get(CONTACTS, {"limit": 2}).json()["next_cursor"]
    page = api().get(CONTACTS, {"limit": 2, "cursor": cursor}).json()
    assert len(page["data"]) == 1


@pytest.mark.parametrize("bad", ["A" * 513, "abc$", "a b", "%00", "AAAA"])
def test_malformed_cursors_are_422(api, widget, bad):
    ContactFactory(widget=widget)
    body = assert_problem(api().get(CONTACTS, {"cursor": bad}), 422, "validation_failed")
    assert body["errors"] == {"cursor": ["Invalid cursor."]}


def test_a_cursor_survives_a_secret_key_rotation(api, widget, settings):
    ContactFactory.create_batch(3, widget=widget)
    cursor = api().get(CONTACTS, {"limit": 2}).json()["next_cursor"]
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "rotated-" + settings.SECRET_KEY
    assert len(api().get(CONTACTS, {"limit": 2, "cursor": cursor}).json()["data"]) == 1
