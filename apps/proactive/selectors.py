"""Reads of proactive messages: the API's shape, the visitor config's list, the text a reply opens
with, and the statistics (from the per-day counts, never from events)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, time, timedelta

from django.db.models import Sum

from apps.agents.models import Agent
from apps.core.models import Widget
from apps.core.timeparse import business_tz

from .models import LANGUAGES, ProactiveCount, ProactiveMessage

# The statistics window when `from`/`to` are left out: the last 30 days, today included.
DEFAULT_DAYS = 30


def message_payload(row: ProactiveMessage) -> dict:
    """A proactive message as the API shows it."""
    return {
        "id": row.pk,
        "name": row.name,
        "enabled": row.enabled,
        "text_i18n": row.text_i18n,
        "agent_id": row.agent_id,
        "rules": row.rules,
        "frequency": row.frequency,
        "priority": row.priority,
        "created_at": row.created_at.isoformat(),
        "updated_at": row.updated_at.isoformat(),
    }


def list_messages(widget: Widget):
    """The widget's proactive messages, oldest first (the console's list)."""
    return ProactiveMessage.objects.filter(widget=widget).order_by("id")


def get_message(*, widget: Widget, message_id: int) -> ProactiveMessage | None:
    return ProactiveMessage.objects.filter(widget=widget, pk=message_id).first()


def get_enabled(*, widget: Widget, message_id) -> ProactiveMessage | None:
    """An enabled message of the widget by id, with its agent; None for an unknown, foreign or
    disabled one (the visitor routes answer all three alike)."""
    if isinstance(message_id, bool) or not isinstance(message_id, int):
        return None
    return ProactiveMessage.objects.select_related("agent").filter(widget=widget, pk=message_id, enabled=True).first()


def _avatar(agent: Agent | None, absolute: Callable[[str], str] | None) -> str | None:
    url = agent.avatar.url if agent is not None and agent.avatar else None
    if url and absolute is not None and url.startswith("/"):
        url = absolute(url)
    return url


def sender(row: ProactiveMessage, widget: Widget, *, absolute: Callable[[str], str] | None = None) -> dict:
    """Who the visitor sees as the sender: the message's agent, else the widget's name."""
    if row.agent is not None:
        return {"name": row.agent.name, "avatar_url": _avatar(row.agent, absolute)}
    return {"name": widget.name, "avatar_url": None}


def config_messages(widget: Widget, *, absolute: Callable[[str], str] | None = None) -> list[dict]:
    """The visitor config's `proactive_messages`: the enabled ones, highest priority first (then the
    oldest), in one statement. Built once per config cache generation (every write purges it)."""
    rows = (
        ProactiveMessage.objects.select_related("agent").filter(widget=widget, enabled=True).order_by("-priority", "id")
    )
    return [
        {
            "id": row.pk,
            "name": row.name,
            "text_i18n": row.text_i18n,
            "sender": sender(row, widget, absolute=absolute),
            "rules": row.rules,
            "frequency": row.frequency,
            "priority": row.priority,
        }
        for row in rows
    ]


@dataclass(frozen=True)
class Opening:
    """The first message of a room a proactive reply starts: the text and its sender (None: the
    widget's name)."""

    message_id: int
    body: str
    agent: Agent | None


def text_for(row: ProactiveMessage, *, languages: list[str]) -> str:
    """The message's text in the first of `languages` it has, else English, else its first one (as
    the widget picks it)."""
    texts = row.text_i18n or {}
    for code in [*languages, "en", *LANGUAGES]:
        if texts.get(code):
            return texts[code]
    return ""


def opening(row: ProactiveMessage, *, locale: str, default_language: str) -> Opening:
    """The opening of a reply to `row` for a visitor whose language tag is `locale`."""
    languages = [code for code in (locale[:2].lower(), default_language) if code]
    return Opening(message_id=row.pk, body=text_for(row, languages=languages), agent=row.agent)


def day_range(start: datetime | None, end: datetime | None, *, now: datetime) -> tuple:
    """The days (business time zone) a `from`/`to` window covers: a day counts when its midnight is
    in [from, to). Without `to`: up to today; without `from`: DEFAULT_DAYS days before `to`."""
    tz = business_tz()
    last = (end.astimezone(tz) - timedelta(microseconds=1)).date() if end else now.astimezone(tz).date()
    if start is None:
        return last - timedelta(days=DEFAULT_DAYS - 1), last
    local = start.astimezone(tz)
    first = local.date() if local.timetz().replace(tzinfo=None) == time.min else local.date() + timedelta(days=1)
    return first, last


def message_stats(*, widget: Widget, message: ProactiveMessage, start, end, now: datetime) -> dict:
    """`{shown, opened, replied}` of the message over the window's days, from the per-day counts."""
    first, last = day_range(start, end, now=now)
    totals = ProactiveCount.objects.filter(widget=widget, message=message, day__gte=first, day__lte=last).aggregate(
        shown=Sum("shown"), opened=Sum("opened"), replied=Sum("replied")
    )
    return {name: totals[name] or 0 for name in ("shown", "opened", "replied")}


def stats_by_message(widget: Widget, *, days: int = DEFAULT_DAYS, now: datetime) -> dict[int, dict]:
    """The console's list: `{message_id: {shown, opened, replied}}` of the last `days` days, one
    statement for every message."""
    last = now.astimezone(business_tz()).date()
    rows = (
        ProactiveCount.objects.filter(widget=widget, day__gte=last - timedelta(days=days - 1), day__lte=last)
        .values("message_id")
        .annotate(shown=Sum("shown"), opened=Sum("opened"), replied=Sum("replied"))
    )
    return {r["message_id"]: {k: r[k] or 0 for k in ("shown", "opened", "replied")} for r in rows}
