"""What every chat write shares: the errors of a spam or rated chat, and the row lock a writer
takes a chat by (`lock_chat`)."""

from __future__ import annotations

from apps.core.errors import Conflict
from apps.core.models import Widget

from .. import selectors
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
    message takes its room by contact: `selectors.locked_room`). Chat.DoesNotExist when `widget` has
    no such chat, or its contact's erasure was accepted (apps.erasure): nothing writes it back.

    It always reads and locks: a chat locked already in the same transaction is read again by its
    primary key (the lock is held, so nothing waits), and the caller gets the row as it stands."""
    found = selectors.locked_chat(widget_id=widget.pk, chat_id=chat.pk, related=related)
    if found is None:
        raise Chat.DoesNotExist("Chat matching query does not exist.")
    return found
