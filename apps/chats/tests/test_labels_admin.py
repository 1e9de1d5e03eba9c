"""Chat labels in Django admin follow the API's rules and go through the services."""

import pytest

from apps.audit.models import AuditEntry
from apps.chats import services
from apps.chats.models import ChatLabel, Label
from apps.chats.tests.factories import ChatFactory

pytestmark = pytest.mark.django_db

ADD = "/admin/chats/label/add/"


def form(widget, **overrides) -> dict:
    return {"widget": widget.pk, "name": "vip", "color": "", **overrides}


def test_admin_creates_a_label_in_nfc_through_the_service(admin_client, widget):
    response = admin_client.post(ADD, form(widget, name="Cafe\u0301", color="#AA00BB"))

    assert response.status_code == 302, response.content.decode()[:2000]
    label = Label.objects.get()
    assert (label.name, label.color) == ("Caf\u00e9", "#aa00bb")
    assert AuditEntry.objects.filter(action="label.created", target_id=str(label.pk)).exists()


@pytest.mark.parametrize("bad", [{"name": "Re\u200bfund"}, {"name": "x" * 51}, {"color": "red"}, {"name": "VIP"}])
def test_admin_refuses_what_the_api_refuses(admin_client, widget, bad):
    services.create_label(widget=widget, name="vip")

    response = admin_client.post(ADD, form(widget, **{"name": "new", **bad}))

    assert response.status_code == 200
    assert Label.objects.count() == 1


def test_deleting_in_admin_takes_the_label_off_every_chat(admin_client, widget, captured_events):
    label = services.create_label(widget=widget, name="vip")
    chat = ChatFactory(widget=widget, contact__widget=widget)
    services.set_chat_labels(widget=widget, chat=chat, names=["vip"], by="api")

    admin_client.post(f"/admin/chats/label/{label.pk}/delete/", {"post": "yes"})

    assert not Label.objects.exists() and not ChatLabel.objects.exists()
    assert captured_events()[-1][0] == "chat.labels_changed"


def test_another_accounts_labels_are_neither_listed_nor_changed(widget, other_widget):
    from tests.support.admin import staff_client

    theirs = services.create_label(widget=other_widget, name="Theirs")
    client = staff_client("chats", "view_label", "change_label", account_of=widget)

    assert "Theirs" not in client.get("/admin/chats/label/").content.decode()
    response = client.post(f"/admin/chats/label/{theirs.pk}/change/", form(other_widget, name="Mine"))
    assert response.status_code == 302 and response["Location"] == "/admin/"
    assert Label.objects.get(pk=theirs.pk).name == "Theirs"
