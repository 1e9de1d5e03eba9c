"""Writes of the console itself: signing in and out (the agent event log records both), and a file
sent from the composer (stored as every upload is, then sent through apps.chats like a reply)."""

from __future__ import annotations

from django.contrib.auth import login, logout
from django.db import transaction

from apps.agents.models import Agent
from apps.agents.services import record_agent_event
from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.core.files import check_upload_size, store_file

from . import access


@transaction.atomic
def sign_in(request, user) -> None:
    """Log the user in (a new session key, a new CSRF token) and record `console_login` for each
    of the user's operator rows."""
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    for agent in access.operator_rows(user):
        record_agent_event(widget=agent.widget, agent=agent, type="console_login")


@transaction.atomic
def sign_out(request) -> None:
    """End the session; `console_logout` for each operator row of the user it logged in."""
    user = request.user
    if user.is_authenticated:
        for agent in access.operator_rows(user):
            record_agent_event(widget=agent.widget, agent=agent, type="console_logout")
    logout(request)


@transaction.atomic
def send_file(*, agent: Agent, chat: Chat, upload) -> Message:
    """The operator sends `upload` into `chat`: an `image` message when its type is an image, else a
    `file` message. Over the upload limit is 413 (BodyTooLarge) and stores nothing; the file row and
    the message commit together (a refusing chat, e.g. spam, rolls the file row back)."""
    assert chat.widget_id == agent.widget_id
    check_upload_size(upload)
    file = store_file(
        widget=agent.widget,
        content=upload,
        original_name=upload.name,
        content_type=upload.content_type or "application/octet-stream",
        size=upload.size,
    )
    kind = Message.Type.IMAGE if file.content_type.startswith("image/") else Message.Type.FILE
    return chat_services.post_agent_message(
        widget=agent.widget,
        chat=chat,
        agent=agent,
        data=chat_services.MessageInput(type=kind, file_id=file.pk),
        source="console",
    )
