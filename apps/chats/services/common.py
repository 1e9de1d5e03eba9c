"""What every chat write shares: the errors of a spam or rated chat, and the row lock a writer
takes a chat by (`lock_chat`)."""

from __future__ import annotations

from django.db import transaction

from apps.core.errors import Conflict
from apps.core.models import Widget
from apps.core.statements import ModelStatement, Slot

from ..models import Chat


class ChatIsSpam(Conflict):
    """The chat is marked spam: only `state: active` moves it, and it takes no messages."""

    code, title = "chat_is_spam", "Chat is marked as spam"


class AlreadyRated(Conflict):
    """The visitor has already rated this chat."""

    code, title = "already_rated", "Chat already rated"


def ensure_not_spam(
    chat: Chat, *, detail: str = "A spam chat takes no messages, typing or receipts; move it to active first."
) -> None:
    """The spam rule of every write into a chat (messages, typing, receipts, ratings): 409."""
    if chat.status == Chat.Status.SPAM:
        raise ChatIsSpam(detail)


# What post_agent_message locks a chat with: a caller that takes the lock first (the REST send, a
# support reply) asks for the same rows, and the service's own lock_chat then reads nothing again.
AGENT_MESSAGE_RELATED = ("widget", "contact", "agent")


def lock_chat(*, widget: Widget, chat: Chat, related: tuple[str, ...] = ("widget", "contact")) -> Chat:
    """The chat row of `widget`, locked until the transaction ends (only the chat's own row:
    `of=self`), with `related` rows joined. The one way a writer takes a chat by id (a visitor's
    message takes its room by contact: `_locked_room`). Chat.DoesNotExist when `widget` has no
    such chat, or its contact's erasure was accepted (apps.erasure): nothing writes it back.

    A chat this function returned earlier in the same transaction, with `related` loaded, is
    returned as it is: the row is locked and read already (the caller holds it as it left it).
    `_lock_held` tells whether that transaction is still the current one."""
    if chat.widget_id == widget.pk and _lock_held(chat, related):
        return chat
    found = _LOCKED_CHAT.instances((related,), chat=chat.pk, widget=widget.pk)
    if not found:
        raise Chat.DoesNotExist("Chat matching query does not exist.")
    locked = found[0]
    locked._locked_in = transaction.get_connection().run_on_commit
    return locked


def _lock_held(chat: Chat, related: tuple[str, ...]) -> bool:
    """`chat` came from lock_chat in the current transaction (or savepoint) and has `related`
    loaded. Django replaces the connection's on-commit list at every commit, rollback and savepoint
    rollback (the test events._pending_hand_off makes too), so the list the lock was taken under is
    the current one only while the lock still stands."""
    taken_in = getattr(chat, "_locked_in", None)
    if taken_in is None:
        return False
    connection = transaction.get_connection()
    if not connection.in_atomic_block or taken_in is not connection.run_on_commit:
        return False
    return all(Chat._meta.get_field(name).is_cached(chat) for name in related)


# compiled once per `related`
_LOCKED_CHAT = ModelStatement(
    lambda related: (
        Chat.objects.select_for_update(of=("self",))
        .select_related(*related)
        .filter(pk=Slot("chat", Chat._meta.pk), widget_id=Slot("widget", Widget._meta.pk))
        .live()
    ),
)
