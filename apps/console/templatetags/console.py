"""Template filters of the console's pages (the words come from apps.console.present)."""

from django import template
from django.utils import timezone
from django.utils.dateformat import format as date_format

from apps.chats.models import Chat
from apps.console import present
from apps.console.forms import STATUS_LABELS

register = template.Library()


@register.filter
def status_label(status: str) -> str:
    """A chat's status in the console's language (an unknown value is shown as it is)."""
    return str(STATUS_LABELS.get(status, status))


@register.filter
def who(chat: Chat) -> str:
    """Who the chat's visitor is (the list's rows carry the page of an anonymous visitor)."""
    return present.visitor_name(chat.contact, getattr(chat, "visitor_page", "") or "")


@register.filter
def hue(chat: Chat) -> int:
    return present.avatar_hue(chat.contact)


@register.filter
def initial(name: str) -> str:
    return present.initial(name)


@register.filter
def channel_info(code: str) -> dict:
    return present.channel(code)


@register.filter
def state_note(chat: Chat) -> str:
    return present.state_note(chat)


@register.filter
def when(moment) -> str:
    """A list row's time: the hour today, the day before that."""
    local = timezone.localtime(moment)
    today = timezone.localdate()
    return date_format(local, "H:i" if local.date() == today else "j M")


@register.filter
def unread_label(count: int) -> str:
    return present.unread_label(count)


@register.filter
def waiting(since) -> str:
    return present.waiting_label(since)


@register.filter
def sla_due(due_at) -> str:
    return present.sla_due(due_at)


@register.filter
def sla_soon(due_at) -> bool:
    return present.sla_soon(due_at)


@register.filter
def assigned_by(by: str) -> str:
    return present.assigned_by(by)
