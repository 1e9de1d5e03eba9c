"""Writes of the console itself: signing in and out (the agent event log records both), a file
sent from the composer (stored as every upload is, then sent through apps.chats like a reply), and
an operator's saved views of the chat list."""

from __future__ import annotations

from django.contrib.auth import login, logout
from django.db import transaction
from django.utils.translation import gettext_lazy

from apps.agents.models import Agent
from apps.agents.services import record_agent_event
from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.core.errors import ValidationFailed
from apps.core.files import check_upload_size, store_file
from apps.routing.models import ChatRouting

from . import access
from .models import SavedView
from .selectors import ChatFilters

SAVED_VIEW_NAME_TAKEN = gettext_lazy("You already have a saved view with this name.")
SAVED_VIEWS_FULL = gettext_lazy("You have %(limit)d saved views already: delete one first.")


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


SAVED_VIEWS_MAX = 20


class SavedViewRefused(ValidationFailed):
    """A saved view's name is taken by another of the operator's, or the operator has
    SAVED_VIEWS_MAX already; `errors` names the field for the form."""


@transaction.atomic
def save_view(*, agent: Agent, name: str, filters: ChatFilters) -> SavedView:
    """Keep the list's `filters` under `name` for `agent` (the names compared without regard to
    case). The operator's row is locked, so two saves cannot pass the limit together."""
    Agent.objects.select_for_update().filter(pk=agent.pk).first()
    mine = SavedView.objects.filter(widget_id=agent.widget_id, agent_id=agent.pk)
    if mine.filter(name__iexact=name).exists():
        raise SavedViewRefused(errors={"name": [str(SAVED_VIEW_NAME_TAKEN)]})
    if mine.count() >= SAVED_VIEWS_MAX:
        raise SavedViewRefused(errors={"name": [str(SAVED_VIEWS_FULL) % {"limit": SAVED_VIEWS_MAX}]})
    return SavedView.objects.create(
        widget_id=agent.widget_id,
        agent=agent,
        name=name,
        view=filters.view,
        status=filters.status,
        channel=filters.channel,
        q=filters.q,
    )


@transaction.atomic
def delete_view(*, agent: Agent, view_id: int) -> bool:
    """Forget one of the operator's saved views; False when it is not theirs (or gone)."""
    deleted, _ = SavedView.objects.filter(widget_id=agent.widget_id, agent_id=agent.pk, pk=view_id).delete()
    return bool(deleted)


class NotQueued(Exception):
    """The chat no longer waits in the routing queue (routing or a person took it meanwhile)."""


@transaction.atomic
def assign_from_queue(*, owner: Agent, chat: Chat, to_agent: Agent) -> Chat:
    """The owner gives a queued chat to an operator: the console's transfer (chat.assigned by
    `agent`; routing's handler of that event takes the chat out of the queue). The chat's row is
    locked before the queue is read, so an automatic assignment racing this one either ran before
    (NotQueued) or finds the chat owned and leaves it."""
    locked = chat_services.lock_chat(widget=owner.widget, chat=chat)
    if (
        locked.agent_id is not None
        or not ChatRouting.objects.filter(chat_id=locked.pk, queue_since__isnull=False).exists()
    ):
        raise NotQueued
    return chat_services.transfer_chat(widget=owner.widget, chat=locked, to_agent=to_agent, source="console")
