"""The direct count: every statistics figure computed straight from Chat, Message, Rating and
ChatTransfer, row by row, with no facts. The facts-based figures must equal it (tests here, and
bench/stats.py runs the SQL form of the same definitions)."""

from __future__ import annotations

from datetime import datetime, timedelta

from apps.agents.models import Agent
from apps.chats.models import Chat, ChatTransfer, Message, Rating

GAP = timedelta(minutes=7)
COUNTED = ("client", "agent", "ai")


def _ms(span: timedelta) -> int:
    return span // timedelta(milliseconds=1)


def _avg_seconds(values: list[int]):
    return round(sum(values) / len(values) / 1000, 3) if values else None


def _avg_rating(values: list[int]):
    return round(sum(values) / len(values), 2) if values else None


def _chats(widget, start: datetime, end: datetime) -> list[Chat]:
    return list(Chat.objects.filter(widget=widget, created_at__gte=start, created_at__lt=end))


def first_response_ms(chat: Chat) -> int | None:
    """Reply minus the last conversation-opening visitor message up to the chat's first reply."""
    reply = chat.first_agent_reply_at
    if reply is None:
        return None
    opened, previous = None, None
    for at, author in (
        Message.objects.filter(chat=chat).order_by("created_at", "id").values_list("created_at", "author_kind")
    ):
        if at > reply:
            break
        if author == "client" and (previous is None or at - previous >= GAP):
            opened = at
        previous = at
    return _ms(reply - opened) if opened is not None else None


def _messages(widget, start, end):
    return Message.objects.filter(
        widget=widget, created_at__gte=start, created_at__lt=end, visibility="public", author_kind__in=COUNTED
    )


def widget_stats(widget, start: datetime, end: datetime) -> dict:
    chats = _chats(widget, start, end)
    total = len(chats)
    missed = sum(c.handling == "missed" for c in chats)
    responses = [_ms(c.first_agent_reply_at - c.created_at) for c in chats if c.first_agent_reply_at]
    firsts = [ms for c in chats if (ms := first_response_ms(c)) is not None]
    ratings = list(
        Rating.objects.filter(widget=widget, created_at__gte=start, created_at__lt=end).values_list("value", flat=True)
    )
    return {
        "chats_total": total,
        "chats_missed": missed,
        "chats_accepted": total - missed,
        "chats_accepted_ai": sum(c.accepted_by_type == "ai" for c in chats),
        "chats_accepted_human": sum(c.accepted_by_type == "human" for c in chats),
        "chats_handled_ai": sum(c.handled_by_type == "ai" for c in chats),
        "chats_handled_human": sum(c.handled_by_type == "human" for c in chats),
        "chats_ai_to_human": sum(c.went_ai_to_human for c in chats),
        "chats_human_to_ai": sum(c.went_human_to_ai for c in chats),
        "messages_total": _messages(widget, start, end).count(),
        "avg_response_time_seconds": _avg_seconds(responses),
        "rating_average": _avg_rating(ratings),
        "avg_first_response_seconds": _avg_seconds(firsts),
    }


def channel_stats(widget, start: datetime, end: datetime) -> list[dict]:
    rows = {}
    for chat in _chats(widget, start, end):
        if chat.is_internal:
            continue
        row = rows.setdefault(
            chat.channel,
            {
                "channel": chat.channel,
                "chats_accepted": 0,
                "chats_accepted_ai": 0,
                "chats_accepted_human": 0,
                "chats_missed": 0,
            },
        )
        row["chats_missed" if chat.handling == "missed" else "chats_accepted"] += 1
        row["chats_accepted_ai"] += chat.accepted_by_type == "ai"
        row["chats_accepted_human"] += chat.accepted_by_type == "human"
    return [rows[c] for c in sorted(rows)]


def agent_stats(widget, start: datetime, end: datetime) -> dict[int, dict]:
    chats = _chats(widget, start, end)
    out = {}
    for agent in Agent.objects.filter(widget=widget):
        owned = [c for c in chats if c.agent_id == agent.pk]
        ratings = list(
            Rating.objects.filter(widget=widget, agent=agent, created_at__gte=start, created_at__lt=end).values_list(
                "value", flat=True
            )
        )
        transfers = ChatTransfer.objects.filter(widget=widget, created_at__gte=start, created_at__lt=end)
        out[agent.pk] = {
            "chats_total": len(owned),
            "avg_response_time_seconds": _avg_seconds(
                [_ms(c.first_agent_reply_at - c.created_at) for c in owned if c.first_agent_reply_at]
            ),
            "messages_total": _messages(widget, start, end)
            .filter(agent=agent, author_kind__in=("agent", "ai"))
            .count(),
            "rating_average": _avg_rating(ratings),
            "rating_distribution": {str(v): ratings.count(v) for v in range(1, 6)},
            "chats_accepted": sum(c.accepted_by_id == agent.pk for c in chats),
            "chats_handled": sum(c.handled_by_id == agent.pk for c in chats),
            "chats_transferred_out": transfers.filter(from_agent=agent).count(),
            "chats_transferred_in": transfers.filter(to_agent=agent).count(),
            "chats_missed": 0 if agent.type == "ai" else sum(c.handling == "missed" for c in owned),
        }
    return out
