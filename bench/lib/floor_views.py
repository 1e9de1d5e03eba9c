"""Floors: plain Django views (no DRF, no auth, no rate limit, no idempotency machinery) that do
the same database work as the measured endpoints and answer the same bytes. Served only by
bench.lib.settings; the tenant is a `widget` query parameter because there is no token.

- chat_list: runs the SQL our list runs (once per distinct request it takes the text and bound
  parameters of our compiled statement, apps.chats.selectors.chat_list_sql, or for `q` the ORM's SQL
  of the same calls: the tenant filter, selectors.filter_chats, the payload's columns (`values()`),
  the keyset ordering, cursor condition and limit + 1) and renders the same JSON with an inline
  dict and json.dumps.
- send_message / visitor_message: the same service call as ours (so the same SQL, statistics
  rollups, outbox row, push and Celery hand-off) from a plain view; left out is exactly the API
  layer (authentication and scope lookups, the rate-limit counter, the idempotency lookup, DRF's
  parsing, validation and rendering). bench/message_send.py prints both statement lists.
- subscription_list: the queryset of our webhook subscription list, built by the same ORM calls on
  every request, and the same JSON.
- transcript: `COPY (SELECT the transcript's rows) TO STDOUT`, streamed from an async generator
  in pieces of about 64 KiB.
"""

from __future__ import annotations

import json
import os
from datetime import datetime

import psycopg
from django.conf import settings
from django.core.exceptions import EmptyResultSet
from django.db import connection, transaction
from django.http import HttpResponse, HttpResponseNotFound, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt

from apps.chats.payloads import CHAT_ROW_FIELDS
from apps.core.api.pagination import seal_cursor

CURSOR_VIEW = "cursor:apps.chats.api.views.ChatViewSet"  # KeysetPagination._context of ChatViewSet


def cursor_context(widget_id) -> str:
    return f"{CURSOR_VIEW}:widget:{widget_id}"


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
    queryset = queryset.values(*CHAT_ROW_FIELDS).order_by(*ORDERING)
    if after is not None:
        queryset = queryset.filter(KeysetPagination._after(ORDERING, after))
    compiler = queryset[: limit + 1].query.get_compiler(using="default")
    try:
        sql, params = compiler.as_sql()
    except EmptyResultSet:  # Django answers such a page without a query; so does the floor
        return "", (), {}
    positions = {f"{expr.alias}.{expr.target.column}": i for i, (expr, _, _) in enumerate(compiler.select)}
    if not q:  # our list runs its compiled statement (the same query, slots for the values)
        sql, params = selectors.chat_list_sql(
            widget=widget, limit=limit + 1, after=after, status=status, has_client_messages=has_client_messages
        )
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
    # the payload's chat columns (CHAT_ROW_FIELDS names them as the column names, the guid aside)
    c = {name: pos[f"chats_chat.{name}"] for name in CHAT_ROW_FIELDS if name != "contact__guid"}
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
        next_cursor = seal_cursor(
            [{"dt": last[c["created_at"]].isoformat()}, last[c["id"]]], context=cursor_context(params["widget"])
        )
    body = json.dumps({"data": data, "next_cursor": next_cursor}, ensure_ascii=False, separators=(",", ":"))
    return HttpResponse(body.encode(), content_type="application/json")


def _idempotency_row(cursor, widget_id: int, key: str, path: str, resource_id, now) -> None:
    """The idempotency key row our API stores for a write (the floor never looks one up)."""
    cursor.execute(
        "INSERT INTO core_idempotencykey (widget_id, key, method, path, response_status, resource_id, location, "
        "created_at) VALUES (%s, %s, 'POST', %s, 202, %s, '', %s)",
        (widget_id, key, path[:500], str(resource_id), now),
    )


@csrf_exempt
def send_message(request, chat_id: int):
    """The operator's send without the API layer: the same service call as ours
    (apps.chats.services.post_agent_message: the chat locked, the message row, the chat's facts,
    the statistics rollups, the outbox row, the push to the websocket groups and the Celery hand-off
    after commit) plus the idempotency key row, in one transaction."""
    from apps.chats import services as chat_services
    from apps.chats.models import Chat
    from apps.core.models import Widget

    widget_id = int(request.GET["widget"])
    key = request.headers["X-Service-Idempotency-Key"]
    payload = json.loads(request.body)
    with transaction.atomic():
        try:
            message = chat_services.post_agent_message(
                widget=Widget(pk=widget_id),
                chat=Chat(pk=chat_id, widget_id=widget_id),
                agent=None,
                data=chat_services.MessageInput(type=payload["type"], body=payload.get("body", "")),
            )
        except Chat.DoesNotExist:
            return HttpResponseNotFound()
        with connection.cursor() as cursor:
            _idempotency_row(cursor, widget_id, key, request.path, message.pk, message.created_at)
    body = json.dumps(
        {"status": "accepted", "id": message.pk, "chat_id": chat_id, "created_at": message.created_at.isoformat()}
    )
    return HttpResponse(body.encode(), status=202, content_type="application/json")


@csrf_exempt
def visitor_message(request, contact_id: int):
    """The visitor's message without the API layer: the same service call as ours
    (apps.chats.visitor.services.send_message: the room read, then post_client_message: the chat
    locked, the message row, the chat's facts, the statistics rollups, the outbox row, the push and
    the hand-off after commit). The contact is named by id: no widget lookup by button_guid and no
    session lookup by token."""
    from apps.chats import services as chat_services
    from apps.chats.models import Contact
    from apps.chats.visitor import services as visitor_services
    from apps.core.models import Widget

    widget = Widget(pk=int(request.GET["widget"]))
    contact = Contact(pk=contact_id, widget_id=widget.pk, guid=request.GET["guid"])
    payload = json.loads(request.body)
    message = visitor_services.send_message(
        widget=widget,
        contact=contact,
        data=chat_services.MessageInput(type=payload["type"], body=payload.get("body", "")),
    )
    body = json.dumps({"id": message.pk, "chat_id": message.chat_id, "created_at": message.created_at.isoformat()})
    return HttpResponse(body.encode(), status=201, content_type="application/json")


def subscription_list(request):
    """GET /api/v1/webhook-subscriptions without the API layer: the same queryset built by the same
    ORM calls on every request as our list builds it (the tenant filter, the payload's columns, the
    keyset ordering and limit + 1), the same JSON (the benchmark's page holds every subscription, so
    there is no next_cursor to sign)."""
    from apps.webhooks.api.views import SUBSCRIPTION_ROW_FIELDS, subscription_row_payload
    from apps.webhooks.models import Subscription

    widget_id, limit = int(request.GET["widget"]), int(request.GET.get("limit", "20"))
    queryset = Subscription.objects.filter(widget_id=widget_id).values(*SUBSCRIPTION_ROW_FIELDS)
    rows = list(queryset.order_by(*ORDERING)[: limit + 1])
    if len(rows) > limit:
        return HttpResponse(b"the floor renders one page only", status=500)
    data = [subscription_row_payload(row) for row in rows]
    body = json.dumps({"data": data, "next_cursor": None}, ensure_ascii=False, separators=(",", ":"))
    return HttpResponse(body.encode(), content_type="application/json")


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


# --- the detached assistant test's request floor -------------------------------------------------------------

_floor_clients: dict[tuple[str, str], object] = {}


def _ai_floor_lookup(authorization: str, assistant_id: int):
    """The token (the API's own resolution: a kept copy checked in Redis, or one query; the hash
    check and the last-used touch) and the assistant's credential (one query), or None."""
    from apps.ai.models import Credential
    from apps.core.auth.authentication import BearerTokenAuthentication
    from apps.core.crypto import decrypt_secret

    scheme, _, raw = authorization.partition(" ")
    if scheme.lower() != "bearer":
        return None
    token = BearerTokenAuthentication.resolve(raw.strip())
    credential = Credential.objects.filter(widget_id=token.widget_id, is_active=True).order_by("-id").first()
    if credential is None:
        return None
    return credential.base_url, decrypt_secret(credential.api_key_encrypted), credential.model or "gpt-4o-mini"


@csrf_exempt
async def ai_test(request, assistant_id: int):
    """The floor of POST /v1/ai/assistants/{id}/test: the same HTTP request shape with nothing but what
    any implementation must do: an async Django view authenticates the bearer token (the API's lookup)
    and reads the credential (one thread hop), parses the JSON body, makes one chat completion with the
    official OpenAI SDK (async, its default keep-alive transport, one client per credential) and
    answers JSON. Left out: DRF, scopes, the rate-limit counter, input rules, the assistant and
    operator resolution, admission (in-flight slot, start budget), the committed idempotency claim and
    its result, the guarded transport, the transformation."""
    from asgiref.sync import sync_to_async

    from tests.llm_fake import sdk_floor_client

    found = await sync_to_async(_ai_floor_lookup)(request.META.get("HTTP_AUTHORIZATION", ""), assistant_id)
    if found is None:
        return HttpResponseNotFound()
    base_url, api_key, model = found
    question = json.loads(request.body)["question"]
    client = _floor_clients.get((base_url, api_key))
    if client is None:
        # Trust the fake's authority (the benchmark's process made it; ours would be another).
        ca_file = os.environ.get("REQUESTS_CA_BUNDLE")
        client = _floor_clients[(base_url, api_key)] = sdk_floor_client(
            base_url, api_key, is_async=True, ca_file=ca_file
        )
    response = await client.chat.completions.create(model=model, messages=[{"role": "user", "content": question}])
    body = {"data": {"answer": response.choices[0].message.content or "", "chat_created": False}}
    return HttpResponse(json.dumps(body, ensure_ascii=False), content_type="application/json")
