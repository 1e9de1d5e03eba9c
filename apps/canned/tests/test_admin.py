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


def test_another_accounts_canned_responses_are_neither_listed_nor_changed(widget, other_widget):
    from tests.support.admin import staff_client

    theirs = CannedResponse.objects.create(widget=other_widget, shortcut="refund", title="Refund", text="Theirs")
    client = staff_client("canned", "view_cannedresponse", "change_cannedresponse", account_of=widget)
    assert "Theirs" not in client.get("/admin/canned/cannedresponse/").content.decode()
    response = client.post(f"/admin/canned/cannedresponse/{theirs.pk}/change/", form(other_widget, text="Pay here"))
    assert response.status_code == 302 and response["Location"] == "/admin/"  # "does not exist"
    theirs.refresh_from_db()
    assert theirs.text == "Theirs"


def test_a_canned_response_keeps_its_widget_and_a_taken_shortcut_is_a_form_error(widget):
    from tests.support.admin import staff_client
    from tests.support.factories import WidgetFactory

    CannedResponse.objects.create(widget=widget, shortcut="taken", title="T", text="T")
    mine = CannedResponse.objects.create(widget=widget, shortcut="hello", title="Greeting", text="Hi")
    another_of_mine = WidgetFactory(account=widget.account)
    client = staff_client("canned", "view_cannedresponse", "change_cannedresponse", account_of=widget)
    client.post(f"/admin/canned/cannedresponse/{mine.pk}/change/", form(another_of_mine))
    mine.refresh_from_db()
    assert mine.widget_id == widget.pk
    response = client.post(f"/admin/canned/cannedresponse/{mine.pk}/change/", form(widget, shortcut="taken"))
    assert response.status_code == 200 and "shortcut" in response.context["adminform"].form.errors
    mine.refresh_from_db()
    assert mine.shortcut == "hello"
