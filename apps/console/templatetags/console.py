"""Template filters of the console's pages."""

from django import template

from apps.chats.models import Chat, Message
from apps.console.forms import STATUS_LABELS

register = template.Library()


@register.filter
def status_label(status: str) -> str:
    """A chat's status in the console's language (an unknown value is shown as it is)."""
    return str(STATUS_LABELS.get(status, status))


@register.filter
def awaits_reply(chat: Chat) -> bool:
    """An open chat whose last message is the visitor's (the list draws it marked)."""
    last = chat.last_message
    return (
        last is not None
        and last.author_kind == Message.Author.CLIENT
        and chat.status not in (Chat.Status.EXPIRED, Chat.Status.SPAM)
    )
