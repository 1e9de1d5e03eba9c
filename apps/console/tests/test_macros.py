"""The macro picker of the chat view: which macros an operator sees, running one through the API's
service with the operator as the author, a refusal in the API's words, another's personal macro."""

import pytest

from apps.chats.models import Chat, Message
from apps.macros import services as macro_services
from apps.macros.models import Macro

from .conftest import make_chat

pytestmark = pytest.mark.django_db


def macro(widget, name, actions=None, **kwargs) -> Macro:
    return macro_services.create_macro(widget=widget, name=name, actions=actions or [{"type": "close"}], **kwargs)


def run_url(chat) -> str:
    return f"/console/chats/{chat.pk}/macros/run/"


def test_the_picker_lists_shared_and_own_macros_never_anothers(console, widget, operator, colleague):
    chat = make_chat(widget)
    macro(widget, "Shared one")
    macro(widget, "Mine", visibility="personal", agent=operator)
    macro(widget, "Pavels", visibility="personal", agent=colleague)
    html = console.get(f"/console/chats/{chat.pk}/").content.decode()
    assert 'id="macro-button"' in html and 'role="listbox"' in html
    assert "Shared one" in html and "Mine" in html
    assert "Pavels" not in html


def test_no_macros_no_picker(console, widget):
    chat = make_chat(widget)
    assert "macro-button" not in console.get(f"/console/chats/{chat.pk}/").content.decode()


def test_running_a_macro_writes_as_the_operator_and_redraws_the_composer(htmx, widget, operator):
    chat = make_chat(widget)
    row = macro(widget, "Greet", actions=[{"type": "send_message", "text": "Hi {{contact.name}}, {{agent.name}} here"}])
    response = htmx.post(run_url(chat), {"macro_id": row.pk})
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="composer"') and "Greet" in html and 'role="status"' in html
    message = Message.objects.filter(chat=chat).latest("pk")
    assert (message.body, message.agent_id) == ("Hi Anna, Olga here", operator.pk)
    assert "console:messages" in response["HX-Trigger"]


def test_without_script_a_run_redirects_back_to_the_chat(console, widget):
    chat = make_chat(widget)
    response = console.post(run_url(chat), {"macro_id": macro(widget, "Close").pk})
    assert response.status_code == 303 and response["Location"] == f"/console/chats/{chat.pk}/"
    chat.refresh_from_db()
    assert chat.status == Chat.Status.EXPIRED


def test_a_refusal_is_shown_in_the_apis_words_and_changes_nothing(htmx, widget):
    chat = make_chat(widget, status=Chat.Status.SPAM)
    before = Message.objects.filter(chat=chat).count()
    row = macro(widget, "Note then close", actions=[{"type": "add_note", "text": "x"}, {"type": "close"}])
    response = htmx.post(run_url(chat), {"macro_id": row.pk})
    assert response.status_code == 422
    html = response.content.decode()
    assert 'role="alert"' in html and "Action 1 (add_note) was refused: A spam chat takes no messages" in html
    assert Message.objects.filter(chat=chat).count() == before


def test_another_operators_personal_macro_is_a_404(console, widget, colleague):
    chat = make_chat(widget)
    theirs = macro(widget, "Theirs", visibility="personal", agent=colleague)
    assert console.post(run_url(chat), {"macro_id": theirs.pk}).status_code == 404
    chat.refresh_from_db()
    assert chat.status != Chat.Status.EXPIRED


def test_another_widgets_macro_and_chat_are_404(console, widget, other_widget, foreign_chat):
    chat = make_chat(widget)
    assert console.post(run_url(chat), {"macro_id": macro(other_widget, "Foreign").pk}).status_code == 404
    assert console.post(run_url(foreign_chat), {"macro_id": macro(widget, "Mine").pk}).status_code == 404
    assert console.post(run_url(chat), {"macro_id": "x"}).status_code == 404


def test_running_needs_a_post(console, widget):
    chat = make_chat(widget)
    assert console.get(run_url(chat)).status_code == 405
