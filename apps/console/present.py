"""How the console names what it shows: who a visitor is, their avatar, a channel, a chat's state.
Pure functions of the rows the selectors read (no query here)."""

from __future__ import annotations

import math
from datetime import datetime
from urllib.parse import urlsplit

from django.utils import timezone
from django.utils.timesince import timesince
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from apps.chats import services as chat_services
from apps.chats.models import Chat, Contact

AVATAR_HUES = 8
PAGE_CHARS = 40

# Channel codes (the contract's provider codes; `ch{id}` is a custom channel) as the console shows
# them: a proper name and a short mark drawn on the icon.
CHANNELS = {
    "widget": (gettext_lazy("Website"), "web"),
    "tg": ("Telegram", "TG"),
    "vk": ("VK", "VK"),
    "wa": ("WhatsApp", "WA"),
    "vb": ("Viber", "VB"),
    "fb": ("Messenger", "FB"),
    "ok": ("OK", "OK"),
    "mx": ("Max", "MX"),
    "ali": ("AliExpress", "AE"),
    "apple": ("Apple Messages", "AM"),
    "cian": ("Cian", "CI"),
}


def page_label(url: str) -> str:
    """A page address as a short label: host and path, without scheme, query or fragment."""
    parts = urlsplit(url)
    label = (parts.netloc + parts.path.rstrip("/")) or url
    return label if len(label) <= PAGE_CHARS else label[: PAGE_CHARS - 1] + "…"


def visitor_name(contact: Contact, page_url: str = "") -> str:
    """Who the visitor is: the name, else the e-mail, else the phone, else the page they wrote from."""
    if contact.name:
        return contact.name
    if contact.email:
        return contact.email
    if contact.phone:
        return contact.phone
    if page_url:
        return _("Visitor from %(page)s") % {"page": page_label(page_url)}
    return _("Visitor")


def avatar_hue(contact: Contact) -> int:
    """A colour (one of AVATAR_HUES) that stays with the contact: two visitors with the same name
    rarely share it, and one visitor keeps it across chats."""
    return contact.pk % AVATAR_HUES


def initial(name: str) -> str:
    return name[:1].upper() or "?"


def channel(code: str) -> dict:
    """{"name", "mark", "kind"}: the widget, a messenger by its code, or a custom channel."""
    if code in CHANNELS:
        name, mark = CHANNELS[code]
        return {"name": str(name), "mark": mark, "kind": code}
    if code.startswith("ch") and code[2:].isdigit():
        return {"name": _("Custom channel %(id)s") % {"id": code[2:]}, "mark": "API", "kind": "custom"}
    return {"name": code, "mark": code[:2].upper(), "kind": "other"}


def unread_label(count: int) -> str:
    """A row's count of unread messages in words ("3 unread messages")."""
    return ngettext("%(n)s unread message", "%(n)s unread messages", count) % {"n": count}


def waiting_label(since: datetime, *, now: datetime | None = None) -> str:
    """How long a visitor has waited since `since`, in words ("waiting 5 minutes")."""
    return _("waiting %(time)s") % {"time": timesince(since, now)}


def state_note(chat: Chat, *, now: datetime | None = None) -> str:
    """What the chat's state means for the operator, said where the state shows."""
    now = now or timezone.now()
    recent = chat.last_message_at is not None and chat.last_message_at > now - chat_services.IDLE_EXPIRY
    if chat.status == Chat.Status.ACTIVE:
        return _("Closes by itself 7 minutes after the last message.")
    if chat.status == Chat.Status.EXPIRED:
        if recent:
            return _(
                "Reopens if the visitor writes. Its last message is under 7 minutes old, so the next "
                "check (every 5 minutes) shows it as open again until it has been quiet for 7 minutes."
            )
        return _("Reopens if the visitor writes.")
    if chat.status == Chat.Status.READY:
        return _("Ready: the next check (every 5 minutes) sets it open or closed by its last message.")
    return _("Marked as spam: it stays out of the views until it is moved back.")


# An SLA countdown's words (console.js redraws them every 30 s from the same strings).
SLA_NOW = gettext_lazy("SLA due now")
SLA_MINUTES = gettext_lazy("SLA due in %(minutes)s min")
SLA_HOURS = gettext_lazy("SLA due in %(hours)s h")


SLA_SOON_SECONDS = 300


def sla_due(due_at: datetime, *, now: datetime | None = None) -> str:
    """The countdown's text: "SLA due in 4 min" (minutes rounded up; whole hours from two hours on), "SLA due now" once
    the due time passed (the breach timer marks it breached shortly)."""
    seconds = (due_at - (now or timezone.now())).total_seconds()
    if seconds <= 0:
        return str(SLA_NOW)
    minutes = math.ceil(seconds / 60)
    if minutes < 120:
        return str(SLA_MINUTES) % {"minutes": minutes}
    return str(SLA_HOURS) % {"hours": minutes // 60}


def sla_soon(due_at: datetime, *, now: datetime | None = None) -> bool:
    return (due_at - (now or timezone.now())).total_seconds() <= SLA_SOON_SECONDS


# How a chat came to its operator, in words (the routing read's `assigned_by`).
ASSIGNED_BY = {
    "routing": gettext_lazy("Routing, automatically"),
    "agent": gettext_lazy("A person in the console"),
    "api": gettext_lazy("The API"),
    "automation": gettext_lazy("An automation rule or macro"),
}


def assigned_by(by: str) -> str:
    return str(ASSIGNED_BY.get(by, by))
