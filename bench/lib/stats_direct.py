"""The direct count: each statistics endpoint's figures as one SQL aggregate over the base tables
(chats_chat, chats_message, chats_rating, chats_chattransfer), with the definitions of
apps.stats.facts and the reference of apps/stats/tests/reference.py. It is the floor of
bench/stats.py (timed in the same run) and the figures our endpoints must equal.

Each function takes a cursor and returns the figures shaped as the endpoint's `metrics` (or rows).
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

MSK = ZoneInfo("Europe/Moscow")
IN_WINDOW = "widget_id = %(w)s AND created_at >= %(start)s AND created_at < %(end)s"
COUNTED = "visibility = 'public' AND author_kind IN ('client', 'agent', 'ai')"
RESPONSE_MS = "floor(extract(epoch FROM first_agent_reply_at - created_at) * 1000)"


def _avg_seconds(total, count):
    return round(int(total) / count / 1000, 3) if count else None


def _avg_rating(total, count):
    return round(int(total) / count, 2) if count else None


def _params(widget_id: int, start: datetime, end: datetime, **extra) -> dict:
    return {"w": widget_id, "start": start, "end": end, **extra}


def widget_stats(cur, widget_id: int, start: datetime, end: datetime) -> dict:
    """GET /v1/stats (the twelve default metrics)."""
    cur.execute(
        f"""
        SELECT c.*, m.messages_total, r.rating_sum, r.rating_count
        FROM (SELECT count(*) AS chats_total,
                     count(*) FILTER (WHERE handling = 'missed') AS chats_missed,
                     count(*) FILTER (WHERE accepted_by_type = 'ai') AS chats_accepted_ai,
                     count(*) FILTER (WHERE accepted_by_type = 'human') AS chats_accepted_human,
                     count(*) FILTER (WHERE handled_by_type = 'ai') AS chats_handled_ai,
                     count(*) FILTER (WHERE handled_by_type = 'human') AS chats_handled_human,
                     count(*) FILTER (WHERE went_ai_to_human) AS chats_ai_to_human,
                     count(*) FILTER (WHERE went_human_to_ai) AS chats_human_to_ai,
                     coalesce(sum({RESPONSE_MS}), 0) AS response_ms_sum,
                     count(first_agent_reply_at) AS response_count
              FROM chats_chat WHERE {IN_WINDOW}) c,
             (SELECT count(*) AS messages_total FROM chats_message WHERE {IN_WINDOW} AND {COUNTED}) m,
             (SELECT coalesce(sum(value), 0) AS rating_sum, count(*) AS rating_count
              FROM chats_rating WHERE {IN_WINDOW}) r
        """,
        _params(widget_id, start, end),
    )
    names = [d.name for d in cur.description]
    row = dict(zip(names, cur.fetchone(), strict=True))
    return {
        "chats_total": row["chats_total"],
        "chats_missed": row["chats_missed"],
        "chats_accepted": row["chats_total"] - row["chats_missed"],
        "chats_accepted_ai": row["chats_accepted_ai"],
        "chats_accepted_human": row["chats_accepted_human"],
        "chats_handled_ai": row["chats_handled_ai"],
        "chats_handled_human": row["chats_handled_human"],
        "chats_ai_to_human": row["chats_ai_to_human"],
        "chats_human_to_ai": row["chats_human_to_ai"],
        "messages_total": row["messages_total"],
        "avg_response_time_seconds": _avg_seconds(row["response_ms_sum"], row["response_count"]),
        "rating_average": _avg_rating(row["rating_sum"], row["rating_count"]),
    }


def first_response(cur, widget_id: int, start: datetime, end: datetime) -> dict:
    """GET /v1/stats?metric=avg_first_response_seconds: per answered chat of the window, the reply
    minus the last visitor message opening a conversation (first of the room, or 7 minutes or more
    after the previous message) up to the first reply."""
    cur.execute(
        f"""
        WITH answered AS (
            SELECT id, first_agent_reply_at AS reply FROM chats_chat
            WHERE {IN_WINDOW} AND first_agent_reply_at IS NOT NULL),
        ordered AS (
            SELECT m.chat_id, m.created_at, m.author_kind,
                   lag(m.created_at) OVER (PARTITION BY m.chat_id ORDER BY m.created_at, m.id) AS previous
            FROM chats_message m JOIN answered a ON a.id = m.chat_id
            WHERE m.created_at <= a.reply),
        opened AS (
            SELECT chat_id, max(created_at) AS at FROM ordered
            WHERE author_kind = 'client' AND (previous IS NULL OR created_at - previous >= interval '7 minutes')
            GROUP BY chat_id)
        SELECT coalesce(sum(floor(extract(epoch FROM a.reply - o.at) * 1000)), 0), count(*)
        FROM answered a JOIN opened o ON o.chat_id = a.id
        """,
        _params(widget_id, start, end),
    )
    total, count = cur.fetchone()
    return {"avg_first_response_seconds": _avg_seconds(total, count)}


def channel_stats(cur, widget_id: int, start: datetime, end: datetime) -> list[dict]:
    """GET /v1/stats/channels."""
    cur.execute(
        f"""
        SELECT channel,
               count(*) FILTER (WHERE handling <> 'missed'),
               count(*) FILTER (WHERE accepted_by_type = 'ai'),
               count(*) FILTER (WHERE accepted_by_type = 'human'),
               count(*) FILTER (WHERE handling = 'missed')
        FROM chats_chat WHERE {IN_WINDOW} AND NOT is_internal
        GROUP BY channel ORDER BY channel
        """,
        _params(widget_id, start, end),
    )
    names = ("channel", "chats_accepted", "chats_accepted_ai", "chats_accepted_human", "chats_missed")
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=MSK)


def timeseries(cur, widget_id: int, start: datetime, end: datetime) -> list[dict]:
    """GET /v1/stats/timeseries (day buckets, every metric), dense and zero-filled."""
    cur.execute(
        f"""
        SELECT coalesce(c.day, m.day), coalesce(c.total, 0), coalesce(c.missed, 0), coalesce(c.ai, 0),
               coalesce(c.human, 0), coalesce(m.n, 0)
        FROM (SELECT (created_at AT TIME ZONE 'Europe/Moscow')::date AS day, count(*) AS total,
                     count(*) FILTER (WHERE handling = 'missed') AS missed,
                     count(*) FILTER (WHERE accepted_by_type = 'ai') AS ai,
                     count(*) FILTER (WHERE accepted_by_type = 'human') AS human
              FROM chats_chat WHERE {IN_WINDOW} GROUP BY 1) c
        FULL JOIN (SELECT (created_at AT TIME ZONE 'Europe/Moscow')::date AS day, count(*) AS n
                   FROM chats_message WHERE {IN_WINDOW} AND {COUNTED} GROUP BY 1) m ON m.day = c.day
        """,
        _params(widget_id, start, end),
    )
    per_day = {row[0]: row[1:] for row in cur.fetchall()}
    buckets = []
    day, last = start.astimezone(MSK).date(), (end.astimezone(MSK) - timedelta(microseconds=1)).date()
    while day <= last:
        total, missed, ai, human, messages = per_day.get(day, (0, 0, 0, 0, 0))
        buckets.append(
            {
                "from": max(_midnight(day), start).astimezone(MSK).isoformat(),
                "to": min(_midnight(day + timedelta(days=1)), end).astimezone(MSK).isoformat(),
                "metrics": {
                    "chats_total": total,
                    "chats_missed": missed,
                    "chats_accepted": total - missed,
                    "chats_accepted_ai": ai,
                    "chats_accepted_human": human,
                    "messages_total": messages,
                },
            }
        )
        day += timedelta(days=1)
    return buckets


def agent_stats(cur, widget_id: int, start: datetime, end: datetime, agent_id: int | None = None) -> dict[int, dict]:
    """GET /v1/agents/stats (every agent) or GET /v1/agents/{id}/stats (`agent_id`): agent id -> metrics."""
    one = agent_id is not None

    def only(column: str) -> str:
        return f"AND {column} = %(agent)s" if one else f"AND {column} IS NOT NULL"

    cur.execute(
        f"""
        SELECT a.id, a.type,
               coalesce(o.total, 0), coalesce(o.missed, 0), coalesce(o.response_ms_sum, 0), coalesce(o.answered, 0),
               coalesce(m.n, 0), coalesce(acc.n, 0), coalesce(han.n, 0), coalesce(t_out.n, 0), coalesce(t_in.n, 0),
               coalesce(r.r1, 0), coalesce(r.r2, 0), coalesce(r.r3, 0), coalesce(r.r4, 0), coalesce(r.r5, 0)
        FROM agents_agent a
        LEFT JOIN (SELECT agent_id AS id, count(*) AS total, count(*) FILTER (WHERE handling = 'missed') AS missed,
                          sum({RESPONSE_MS}) AS response_ms_sum, count(first_agent_reply_at) AS answered
                   FROM chats_chat WHERE {IN_WINDOW} {only("agent_id")} GROUP BY 1) o ON o.id = a.id
        LEFT JOIN (SELECT agent_id AS id, count(*) AS n FROM chats_message
                   WHERE {IN_WINDOW} AND visibility = 'public' AND author_kind IN ('agent', 'ai') {only("agent_id")}
                   GROUP BY 1) m ON m.id = a.id
        LEFT JOIN (SELECT accepted_by_id AS id, count(*) AS n FROM chats_chat
                   WHERE {IN_WINDOW} {only("accepted_by_id")} GROUP BY 1) acc ON acc.id = a.id
        LEFT JOIN (SELECT handled_by_id AS id, count(*) AS n FROM chats_chat
                   WHERE {IN_WINDOW} {only("handled_by_id")} GROUP BY 1) han ON han.id = a.id
        LEFT JOIN (SELECT from_agent_id AS id, count(*) AS n FROM chats_chattransfer
                   WHERE {IN_WINDOW} {only("from_agent_id")} GROUP BY 1) t_out ON t_out.id = a.id
        LEFT JOIN (SELECT to_agent_id AS id, count(*) AS n FROM chats_chattransfer
                   WHERE {IN_WINDOW} {only("to_agent_id")} GROUP BY 1) t_in ON t_in.id = a.id
        LEFT JOIN (SELECT agent_id AS id, count(*) FILTER (WHERE value = 1) AS r1,
                          count(*) FILTER (WHERE value = 2) AS r2, count(*) FILTER (WHERE value = 3) AS r3,
                          count(*) FILTER (WHERE value = 4) AS r4, count(*) FILTER (WHERE value = 5) AS r5
                   FROM chats_rating WHERE {IN_WINDOW} {only("agent_id")} GROUP BY 1) r ON r.id = a.id
        WHERE a.widget_id = %(w)s {"AND a.id = %(agent)s" if one else ""}
        ORDER BY a.id
        """,
        _params(widget_id, start, end, agent=agent_id),
    )
    out = {}
    for row in cur.fetchall():
        (pk, kind, total, missed, response_ms, answered, messages, accepted, handled, t_out, t_in, *ratings) = row
        rated = sum(ratings)
        out[pk] = {
            "chats_total": total,
            "avg_response_time_seconds": _avg_seconds(response_ms, answered),
            "messages_total": messages,
            "rating_average": _avg_rating(sum(v * n for v, n in enumerate(ratings, start=1)), rated),
            "rating_distribution": {str(v): n for v, n in enumerate(ratings, start=1)},
            "chats_accepted": accepted,
            "chats_handled": handled,
            "chats_transferred_out": t_out,
            "chats_transferred_in": t_in,
            "chats_missed": 0 if kind == "ai" else missed,
        }
    return out
