"""Canned responses in Django admin follow the API's rules for the title and the text."""

import pytest

from apps.canned.models import CannedResponse

pytestmark = pytest.mark.django_db

ADD = "/admin/canned/cannedresponse/add/"


def form(widget, **overrides) -> dict:
    return {"widget": widget.pk, "shortcut": "hello", "title": "Greeting", "text": "Hi", "language": "", **overrides}


def test_admin_creates_a_canned_response_with_an_nfc_title(admin_client, widget):
    response = admin_client.post(ADD, form(widget, title="Cafe\u0301"))
    assert response.status_code == 302, response.content.decode()[:2000]
    assert CannedResponse.objects.get().title == "Caf\u00e9"


@pytest.mark.parametrize(
    "bad",
    [{"title": "Refund\u202epolicy"}, {"title": "Re\u200bfund"}, {"text": "x" * 4001}, {"text": "{{contact.phone}}"}],
)
def test_admin_refuses_what_the_api_refuses(admin_client, widget, bad):
    response = admin_client.post(ADD, form(widget, **bad))
    assert response.status_code == 200
    assert not CannedResponse.objects.exists()
