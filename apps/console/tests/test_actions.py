"""The console's actions, each through the one service of apps.chats: success, signed out (to the
login), another widget's chat (404), bad input or a refusing state (an error, nothing changed) and
CSRF. htmx posts get the fragment they change; plain posts a redirect back to the chat."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from apps.agents.tests.factories import HumanAgentFactory
from apps.chats.models import Chat, File, Message, Rating

from .conftest import make_chat

pytestmark = pytest.mark.django_db

ACTIONS = {
    "reply": {"body": "Hi, how can I help?"},
    "note": {"body": "VIP customer"},
    "accept": {},
    "transfer": None,  # filled with the colleague's id
    "close": {},
    "spam": {},
    "not-spam": {},
    "rate-request": {},
    "typing": {"state": "start"},
    "seen": {},
    "file": None,  # a fresh upload each time
}


def url(chat, action):
    return f"/console/chats/{chat.pk}/{action}/"


def upload(name="notes.txt", content=b"hello", content_type="text/plain"):
    return SimpleUploadedFile(name, content, content_type=content_type)


def data_for(action, colleague):
    if action == "file":
        return {"file": upload()}
    return {"agent": colleague.pk} if action == "transfer" else ACTIONS[action]


def snapshot(chat):
    chat = Chat.objects.get(pk=chat.pk)
    return (
        chat.status,
        chat.agent_id,
        chat.handled_by_id,
        list(Message.objects.filter(chat=chat).values_list("pk", "seen_at")),
    )


@pytest.mark.parametrize("action", list(ACTIONS))
def test_signed_out_posts_go_to_the_login_and_change_nothing(chat, colleague, action):
    before = snapshot(chat)
    response = Client().post(url(chat, action), data_for(action, colleague))
    assert response.status_code == 302 and response["Location"] == "/console/login/"
    assert snapshot(chat) == before


@pytest.mark.parametrize("action", list(ACTIONS))
def test_another_widgets_chat_is_a_404_and_changes_nothing(console, foreign_chat, colleague, action):
    before = snapshot(foreign_chat)
    assert console.post(url(foreign_chat, action), data_for(action, colleague)).status_code == 404
    assert snapshot(foreign_chat) == before


@pytest.mark.parametrize("action", list(ACTIONS))
def test_actions_need_the_csrf_token(operator, chat, colleague, action):
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator.user)
    before = snapshot(chat)
    assert client.post(url(chat, action), data_for(action, colleague)).status_code == 403
    assert snapshot(chat) == before


@pytest.mark.parametrize("action", [a for a in ACTIONS if a != "typing"])
def test_actions_are_posts(console, chat, action):
    assert console.get(url(chat, action)).status_code == 405


# --- reply and note -------------------------------------------------------------------------------


def test_a_reply_is_a_public_message_of_the_operator_and_accepts_the_chat(htmx, chat, operator):
    response = htmx.post(url(chat, "reply"), {"body": "Hi, how can I help?"})
    assert response.status_code == 200
    assert "console:messages" in response["HX-Trigger"]
    assert 'id="composer"' in response.content.decode()
    message = Message.objects.filter(chat=chat).latest("pk")
    assert (message.body, message.agent_id, message.visibility) == ("Hi, how can I help?", operator.pk, "public")
    chat.refresh_from_db()
    assert chat.agent_id == operator.pk and chat.handled_by_id == operator.pk


def test_a_plain_reply_redirects_back_to_the_chat(console, chat):
    response = console.post(url(chat, "reply"), {"body": "Hello"})
    assert response.status_code == 303 and response["Location"] == f"/console/chats/{chat.pk}/"


@pytest.mark.parametrize("body", ["", "   \n ", "x" * 65537])
def test_an_empty_or_oversized_reply_is_refused_and_stores_nothing(htmx, console, chat, body):
    before = snapshot(chat)
    response = htmx.post(url(chat, "reply"), {"body": body})
    assert response.status_code == 422
    assert 'role="alert"' in response.content.decode()
    plain = console.post(url(chat, "reply"), {"body": body})
    assert plain.status_code == 422 and 'id="chat-panel"' in plain.content.decode()
    assert snapshot(chat) == before


def test_a_reply_into_a_spam_chat_says_why_and_stores_nothing(htmx, widget):
    chat = make_chat(widget, status=Chat.Status.SPAM)
    before = snapshot(chat)
    response = htmx.post(url(chat, "reply"), {"body": "hello?"})
    assert response.status_code == 409
    assert "spam" in response.content.decode()
    assert snapshot(chat) == before


def test_a_note_is_private_and_does_not_accept(htmx, chat, operator):
    assert htmx.post(url(chat, "note"), {"body": "VIP customer"}).status_code == 200
    note = Message.objects.filter(chat=chat).latest("pk")
    assert (note.body, note.visibility, note.agent_id) == ("VIP customer", Message.Visibility.NOTE, operator.pk)
    chat.refresh_from_db()
    assert chat.agent_id is None and chat.handled_by_id is None


def test_an_empty_note_is_refused(htmx, chat):
    before = snapshot(chat)
    assert htmx.post(url(chat, "note"), {"body": " "}).status_code == 422
    assert snapshot(chat) == before


# --- accept, transfer, close, rating ---------------------------------------------------------------


def test_accept(htmx, chat, operator, captured_events):
    response = htmx.post(url(chat, "accept"))
    assert response.status_code == 200 and 'id="chat-panel"' in response.content.decode()
    assert "console:list" in response["HX-Trigger"]
    chat.refresh_from_db()
    assert (chat.accepted_by_id, chat.handled_by_id, chat.agent_id) == (operator.pk, operator.pk, operator.pk)
    # an unowned chat accepted in the console becomes the operator's: chat.assigned by "agent"
    assert [t for t, _ in captured_events()] == ["chat.accepted", "chat.assigned"]
    assert [d["by"] for t, d in captured_events() if t == "chat.assigned"] == ["agent"]


def test_a_plain_accept_redirects_back(console, chat):
    assert console.post(url(chat, "accept"))["Location"] == f"/console/chats/{chat.pk}/"


def test_transfer(htmx, chat, operator, colleague, captured_events):
    response = htmx.post(url(chat, "transfer"), {"agent": colleague.pk})
    assert response.status_code == 200
    chat.refresh_from_db()
    assert chat.agent_id == colleague.pk
    assert "chat.transferred" in [t for t, _ in captured_events()]


@pytest.mark.parametrize("case", ["missing", "foreign", "banned", "empty", "self"])
def test_transfer_to_an_agent_one_cannot_pick_is_refused(htmx, console, chat, operator, other_widget, case):
    agent = {
        "missing": 999999,
        "foreign": lambda: HumanAgentFactory(widget=other_widget).pk,
        "banned": lambda: HumanAgentFactory(widget=chat.widget, status="banned").pk,
        "empty": "",
        "self": operator.pk,
    }[case]
    agent = agent() if callable(agent) else agent
    before = snapshot(chat)
    response = htmx.post(url(chat, "transfer"), {"agent": agent})
    assert response.status_code == 422
    assert "Choose an agent" in response.content.decode()
    assert console.post(url(chat, "transfer"), {"agent": agent}).status_code == 422
    assert snapshot(chat) == before


def test_close(htmx, chat, captured_events):
    response = htmx.post(url(chat, "close"))
    assert response.status_code == 200
    chat.refresh_from_db()
    assert chat.status == Chat.Status.EXPIRED
    assert [t for t, _ in captured_events()] == ["chat.closed"]
    assert "Close chat" not in response.content.decode()


def test_closing_a_spam_chat_is_refused(htmx, console, widget):
    chat = make_chat(widget, status=Chat.Status.SPAM)
    response = htmx.post(url(chat, "close"))
    assert response.status_code == 409 and "spam" in response.content.decode()
    plain = console.post(url(chat, "close"))
    assert plain.status_code == 409 and 'role="alert"' in plain.content.decode()
    chat.refresh_from_db()
    assert chat.status == Chat.Status.SPAM


def test_mark_as_spam_and_back(htmx, console, chat):
    response = htmx.post(url(chat, "spam"))
    assert response.status_code == 200
    chat.refresh_from_db()
    assert chat.status == Chat.Status.SPAM
    html = response.content.decode()
    assert "Not spam" in html and "Mark as spam" not in html
    assert response["HX-Trigger"]  # the list and the history are read again

    plain = console.post(url(chat, "not-spam"))
    assert plain.status_code == 303 and plain["Location"] == f"/console/chats/{chat.pk}/"
    chat.refresh_from_db()
    assert chat.status == Chat.Status.ACTIVE
    assert "Mark as spam" in console.get(f"/console/chats/{chat.pk}/").content.decode()


def test_marking_a_spam_chat_as_spam_again_is_refused_as_the_api_refuses_it(htmx, widget):
    # (a page drawn before another operator marked it: the panel offers "Not spam" instead)
    chat = make_chat(widget, status=Chat.Status.SPAM)
    before = snapshot(chat)
    response = htmx.post(url(chat, "spam"))
    assert response.status_code == 409 and 'role="alert"' in response.content.decode()
    assert snapshot(chat) == before


def test_rate_request(htmx, chat, captured_events):
    assert htmx.post(url(chat, "rate-request")).status_code == 200
    message = Message.objects.filter(chat=chat).latest("pk")
    assert (message.author_kind, message.origin) == (Message.Author.SYSTEM, "rate_request")


def test_a_rate_request_after_a_rating_is_refused(htmx, chat):
    Rating.objects.create(widget=chat.widget, chat=chat, value=5)
    before = snapshot(chat)
    response = htmx.post(url(chat, "rate-request"))
    assert response.status_code == 409 and "already rated" in response.content.decode()
    assert snapshot(chat) == before


# --- typing ---------------------------------------------------------------------------------------


def test_typing_is_forwarded(htmx, chat, monkeypatch):
    from apps.chats import realtime

    pushed = []
    monkeypatch.setattr(realtime, "push", lambda groups, frame: pushed.append((groups, frame)))
    assert htmx.post(url(chat, "typing"), {"state": "start"}).status_code == 204
    groups, frame = pushed[-1]
    assert f"chat.{chat.pk}" in groups
    assert frame == {"event": "typing", "chat_id": chat.pk, "state": "start", "by": "agent"}


def test_a_bad_typing_state_is_refused(htmx, chat):
    assert htmx.post(url(chat, "typing"), {"state": "dancing"}).status_code == 422


def test_typing_into_a_spam_chat_is_refused(htmx, widget):
    chat = make_chat(widget, status=Chat.Status.SPAM)
    assert htmx.post(url(chat, "typing"), {"state": "start"}).status_code == 409


# --- files ----------------------------------------------------------------------------------------------

PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
    b"\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82"
)


def test_a_file_is_sent_as_a_file_message_of_the_operator(htmx, chat, operator, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = htmx.post(url(chat, "file"), {"file": upload("invoice.pdf", b"%PDF-1.4", "application/pdf")})
    assert response.status_code == 200, response.content
    assert "console:messages" in response["HX-Trigger"]
    message = Message.objects.filter(chat=chat).latest("pk")
    assert (message.type, message.agent_id, message.visibility) == ("file", operator.pk, "public")
    assert message.file.original_name == "invoice.pdf" and message.file.widget_id == chat.widget_id
    assert message.file.stored.read() == b"%PDF-1.4"
    chat.refresh_from_db()
    assert chat.agent_id == operator.pk  # like a reply, it accepts the chat
    # and the history draws it as a download link
    page = htmx.get(f"/console/chats/{chat.pk}/messages/?after=0").content.decode()
    assert "invoice.pdf" in page and "download=" in page


def test_an_image_is_sent_as_an_image_message(htmx, chat):
    assert htmx.post(url(chat, "file"), {"file": upload("cat.png", PNG, "image/png")}).status_code == 200
    message = Message.objects.filter(chat=chat).latest("pk")
    assert message.type == "image"
    assert "<img" in htmx.get(f"/console/chats/{chat.pk}/messages/?after=0").content.decode()


def test_a_plain_file_post_redirects_back_to_the_chat(console, chat):
    response = console.post(url(chat, "file"), {"file": upload()})
    assert response.status_code == 303 and response["Location"] == f"/console/chats/{chat.pk}/"
    assert Message.objects.filter(chat=chat, type="file").count() == 1


def test_no_file_is_refused_and_stores_nothing(htmx, console, chat):
    before, files = snapshot(chat), File.objects.count()
    response = htmx.post(url(chat, "file"), {})
    assert response.status_code == 422
    assert "Choose a file first." in response.content.decode()
    assert console.post(url(chat, "file"), {}).status_code == 422
    assert snapshot(chat) == before and File.objects.count() == files


def test_two_files_at_once_are_refused(htmx, chat):
    before, files = snapshot(chat), File.objects.count()
    response = htmx.post(url(chat, "file"), {"file": [upload("a.txt"), upload("b.txt")]})
    assert response.status_code == 422 and "one file" in response.content.decode()
    assert snapshot(chat) == before and File.objects.count() == files


def test_a_file_over_the_upload_limit_is_413_and_stores_nothing(htmx, chat, monkeypatch):
    from apps.core import files

    monkeypatch.setattr(files, "MAX_FILE_BYTES", 4)
    before, count = snapshot(chat), File.objects.count()
    response = htmx.post(url(chat, "file"), {"file": upload(content=b"too large")})
    assert response.status_code == 413 and 'role="alert"' in response.content.decode()
    assert snapshot(chat) == before and File.objects.count() == count


def test_a_file_into_a_spam_chat_is_refused_and_leaves_no_file_row(htmx, widget):
    chat = make_chat(widget, status=Chat.Status.SPAM)
    before, count = snapshot(chat), File.objects.count()
    response = htmx.post(url(chat, "file"), {"file": upload()})
    assert response.status_code == 409 and "spam" in response.content.decode()
    assert snapshot(chat) == before and File.objects.count() == count
