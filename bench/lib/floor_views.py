"""Floors: plain Django views (no DRF, no auth, no rate limit, no idempotency machinery) that do
the same database work as the measured endpoints and answer the same bytes. Served only by
bench.lib.settings; the tenant is a `widget` query parameter because there is no token.

- chat_list: runs the SQL our list runs (built once per distinct request by the same ORM calls:
  the base viewset's tenant filter, select_related, selectors.filter_chats, the keyset ordering,
  cursor condition and limit + 1) and renders the same JSON with an inline dict and json.dumps.
- send_message: in one transaction, the rows our send writes: lock the chat, insert the message,
  update the chat's facts, insert the outbox event and the idempotency key.
- transcript: `COPY (SELECT the transcript's rows) TO STDOUT`, streamed from an async generator
  in pieces of about 64 KiB.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime

import psycopg
from django.conf import settings
from django.core import signing
from django.core.exceptions import EmptyResultSet
from django.db import connection, transaction
from django.http import HttpResponse, HttpResponseNotFound, StreamingHttpResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

CURSOR_SALT = "cursor:apps.chats.api.views.ChatViewSet"  # KeysetPagination._salt of ChatViewSet
ORDERING = ("-created_at", "-id")
MAX_BODY_CHARS = 64 * 1024
TRANSCRIPT_ROWS = 50_001
PIECE_BYTES = 64 * 1024

_compiled: dict[tuple, tuple[str, tuple, dict[str, int]]] = {}


def chat_list_sql(
    *, widget_id: int, limit: int, status=None, has_client_messages=None, q=None, after=None
) -> tuple[str, tuple, dict[str, int]]:
    """The SQL and parameters of our chat list page, and the position of each selected column
    (`table.column`). Built with the ORM calls the API makes, so the text is the same."""
    from apps.chats import selectors
    from apps.chats.models import Chat
    from apps.core.api.pagination import KeysetPagination
    from apps.core.models import Widget

    widget = Widget(pk=widget_id)
    queryset = Chat.objects.all().filter(widget=widget).select_related("contact")
    queryset = selectors.filter_chats(
        queryset, widget=widget, status=status, has_client_messages=has_client_messages, q=q
    )
    queryset = queryset.order_by(*ORDERING)
    if after is not None:
        queryset = queryset.filter(KeysetPagination._after(ORDERING, after))
    compiler = queryset[: limit + 1].query.get_compiler(using="default")
    try:
        sql, params = compiler.as_sql()
    except EmptyResultSet:  # Django answers such a page without a query; so does the floor
        return "", (), {}
    positions = {f"{expr.alias}.{expr.target.column}": i for i, (expr, _, _) in enumerate(compiler.select)}
    return sql, tuple(params), positions


def _parse_after(raw: str | None):
    if not raw:
        return None
    at, _, pk = raw.rpartition(",")
    return [datetime.fromisoformat(at), int(pk)]


def _iso(value):
    return value.isoformat() if value is not None else None


def chat_list(request):
    params = request.GET
    limit = int(params.get("limit", "20"))
    key = (
        params.get("widget"),
        limit,
        params.get("status"),
        params.get("has_client_messages"),
        params.get("q"),
        params.get("after"),
    )
    compiled = _compiled.get(key)
    if compiled is None:
        compiled = _compiled[key] = chat_list_sql(
            widget_id=int(params["widget"]),
            limit=limit,
            status=params.get("status"),
            has_client_messages=params.get("has_client_messages"),
            q=params.get("q"),
            after=_parse_after(params.get("after")),
        )
    sql, sql_params, pos = compiled
    if not sql:
        return HttpResponse(b'{"data":[],"next_cursor":null}', content_type="application/json")
    with connection.cursor() as cursor:
        cursor.execute(sql, sql_params)
        rows = cursor.fetchall()
    c = {
        name: pos[f"chats_chat.{name}"]
        for name in (
            "id",
            "status",
            "channel",
            "agent_id",
            "department_id",
            "accepted_by_id",
            "accepted_by_type",
            "accepted_at",
            "handled_by_id",
            "handled_by_type",
            "handled_at",
            "handling",
            "has_client_messages",
            "last_message_id",
            "last_message_at",
            "created_at",
            "updated_at",
        )
    }
    guid = pos["chats_contact.guid"]
    data = []
    for r in rows[:limit]:
        accepted_type, handled_type = r[c["accepted_by_type"]], r[c["handled_by_type"]]
        data.append(
            {
                "id": r[c["id"]],
                "status": r[c["status"]],
                "channel": r[c["channel"]],
                "client_id": r[guid],
                "agent_id": r[c["agent_id"]],
                "department_id": r[c["department_id"]],
                "accepted_by": {
                    "agent_id": r[c["accepted_by_id"]],
                    "type": accepted_type,
                    "at": _iso(r[c["accepted_at"]]),
                }
                if accepted_type
                else None,
                "handled_by": {"agent_id": r[c["handled_by_id"]], "type": handled_type, "at": _iso(r[c["handled_at"]])}
                if handled_type
                else None,
                "handling": r[c["handling"]],
                "has_client_messages": r[c["has_client_messages"]],
                "last_message_id": r[c["last_message_id"]],
                "last_message_at": _iso(r[c["last_message_at"]]),
                "created_at": r[c["created_at"]].isoformat(),
                "updated_at": r[c["updated_at"]].isoformat(),
            }
        )
    next_cursor = None
    if len(rows) > limit:
        last = rows[limit - 1]
        next_cursor = signing.dumps(
            [{"dt": last[c["created_at"]].isoformat()}, last[c["id"]]], salt=CURSOR_SALT, compress=True
        )
    body = json.dumps({"data": data, "next_cursor": next_cursor}, ensure_ascii=False, separators=(",", ":"))
    return HttpResponse(body.encode(), content_type="application/json")


@csrf_exempt
def send_message(request, chat_id: int):
    widget_id = int(request.GET["widget"])
    key = request.headers["X-Service-Idempotency-Key"]
    payload = json.loads(request.body)
    now = timezone.now()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.agent_id, ct.guid, w.button_guid FROM chats_chat c "
            "JOIN chats_contact ct ON ct.id = c.contact_id JOIN core_widget w ON w.id = c.widget_id "
            "WHERE c.id = %s AND c.widget_id = %s FOR UPDATE OF c",
            (chat_id, widget_id),
        )
        row = cursor.fetchone()
        if row is None:
            return HttpResponseNotFound()
        agent_id, contact_guid, button_guid = row
        cursor.execute(
            "INSERT INTO chats_message (widget_id, chat_id, type, body, markdown, origin, author_kind, agent_id, "
            "visibility, created_at) VALUES (%s, %s, %s, %s, '', '', 'agent', %s, 'public', %s) RETURNING id",
            (widget_id, chat_id, payload["type"], payload.get("body", ""), agent_id, now),
        )
        message_id = cursor.fetchone()[0]
        cursor.execute(
            "UPDATE chats_chat SET last_message_id = %s, last_message_at = %s, updated_at = %s WHERE id = %s",
            (message_id, now, now, chat_id),
        )
        event = {
            "chat_id": chat_id,
            "message_id": message_id,
            "client_id": contact_guid,
            "author_type": "OPERATOR",
            "source": "api",
            "button_guid": button_guid,
        }
        cursor.execute(
            "INSERT INTO core_outboxevent (id, widget_id, type, data, created_at, attempts) "
            "VALUES (%s, %s, 'message.created', %s::jsonb, %s, 0)",
            (uuid.uuid4(), widget_id, json.dumps(event), now),
        )
        cursor.execute(
            "INSERT INTO core_idempotencykey (widget_id, key, method, path, response_status, resource_id, location, "
            "created_at) VALUES (%s, %s, 'POST', %s, 202, %s, '', %s)",
            (widget_id, key, request.path[:500], str(message_id), now),
        )
    body = json.dumps({"status": "accepted", "id": message_id, "chat_id": chat_id, "created_at": now.isoformat()})
    return HttpResponse(body.encode(), status=202, content_type="application/json")


TRANSCRIPT_COPY = """
COPY (
    SELECT to_char(m.created_at AT TIME ZONE %s, 'YYYY-MM-DD HH24:MI:SS'), m.type, m.author_kind,
           a.name, a.surname, f.original_name, m.coords, m.sticker, m.keyboard, left(m.body, %s)
    FROM chats_message m
    LEFT JOIN agents_agent a ON a.id = m.agent_id
    LEFT JOIN chats_file f ON f.id = m.file_id
    WHERE m.chat_id = %s AND m.widget_id = %s AND m.visibility = 'public'
    ORDER BY m.created_at, m.id
    LIMIT %s
) TO STDOUT
"""


def _conninfo() -> str:
    db = settings.DATABASES["default"]
    return psycopg.conninfo.make_conninfo(
        dbname=db["NAME"],
        user=db.get("USER") or None,
        password=db.get("PASSWORD") or None,
        host=db.get("HOST") or None,
        port=db.get("PORT") or None,
    )


async def _copy_pieces(chat_id: int, widget_id: int):
    params = (settings.BUSINESS_TIME_ZONE, MAX_BODY_CHARS, chat_id, widget_id, TRANSCRIPT_ROWS)
    async with await psycopg.AsyncConnection.connect(_conninfo(), autocommit=True) as conn:
        async with conn.cursor() as cursor, cursor.copy(TRANSCRIPT_COPY, params) as copy:
            pending, size = [], 0
            async for data in copy:
                pending.append(bytes(data))
                size += len(data)
                if size >= PIECE_BYTES:
                    yield b"".join(pending)
                    pending, size = [], 0
            if pending:
                yield b"".join(pending)


def transcript(request, chat_id: int):
    widget_id = int(request.GET["widget"])
    return StreamingHttpResponse(_copy_pieces(chat_id, widget_id), content_type="text/plain; charset=UTF-8")
