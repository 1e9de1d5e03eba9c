"""The composer's canned-response picker: the widget's rows matching what follows `/`, and the
rendering for the chat through the API's render service. Another widget's rows and chats are 404."""

import pytest
from django.test import Client

from apps.canned.tests.factories import CannedResponseFactory

pytestmark = pytest.mark.django_db


def test_the_picker_lists_the_widgets_matching_rows_by_shortcut(console, widget, other_widget):
    CannedResponseFactory(widget=widget, shortcut="thanks", title="Thank you", text="Merci")
    CannedResponseFactory(widget=widget, shortcut="hello", title="Greeting", text="Bonjour")
    CannedResponseFactory(widget=widget, shortcut="bye", title="Farewell", text="Au revoir")
    CannedResponseFactory(widget=other_widget, shortcut="hello-there", title="Theirs", text="Salut")
    items = console.get("/console/canned/", {"q": "h"}).json()["items"]
    assert [i["shortcut"] for i in items] == ["hello", "thanks"]
    assert set(items[0]) == {"id", "shortcut", "title"}
    assert len(console.get("/console/canned/").json()["items"]) == 3


def test_choosing_renders_the_row_for_the_chat(console, widget, chat, operator):
    chat.agent = operator
    chat.save()
    row = CannedResponseFactory(widget=widget, text="Hi {{contact.name}}, {{agent.name}} here. {{widget.name|Shop}}")
    response = console.get(f"/console/chats/{chat.pk}/canned/{row.pk}/")
    assert response.json() == {"text": "Hi Anna, Olga here. Shop"}


def test_another_widgets_row_or_chat_is_404(console, widget, chat, other_widget, foreign_chat):
    mine, theirs = CannedResponseFactory(widget=widget), CannedResponseFactory(widget=other_widget)
    assert console.get(f"/console/chats/{chat.pk}/canned/{theirs.pk}/").status_code == 404
    assert console.get(f"/console/chats/{foreign_chat.pk}/canned/{mine.pk}/").status_code == 404


def test_signed_out_goes_to_the_login(widget, chat):
    row = CannedResponseFactory(widget=widget)
    for path in ("/console/canned/", f"/console/chats/{chat.pk}/canned/{row.pk}/"):
        response = Client().get(path)
        assert response.status_code == 302 and "/console/login/" in response["Location"]


def test_the_composer_offers_the_picker_as_a_labelled_listbox(console, chat):
    html = console.get(f"/console/chats/{chat.pk}/").content.decode()
    assert 'id="canned-list" class="canned" role="listbox" aria-label="Canned responses"' in html
    assert 'data-canned-url="/console/canned/"' in html
    assert f'data-canned-render-url="/console/chats/{chat.pk}/canned/"' in html
