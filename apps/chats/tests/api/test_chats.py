"""GET/POST /v1/chats...: list, read, close, state, transfer, rate-request."""

from datetime import UTC, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.agents.models import Agent
from apps.chats.models import Chat, ChatTransfer, Message
from apps.chats.tests.factories import AgentFactory, ChatFactory, ContactFactory, MessageFactory
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

_keys = iter(range(1_000_000))


def idem():
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"key-{next(_keys)}"}


def chat_of(widget, **kwargs):
    return ChatFactory(contact=ContactFactory(widget=widget), **kwargs)


# --- list ----------------------------------------------------------------------------------------


def test_list_returns_every_state_newest_first(api, widget):
    chats = [chat_of(widget, status=s) for s in ("active", "ready", "expired", "spam")]
    data = api(scopes=["chats:read"]).get("/api/v1/chats").json()["data"]
    assert [c["id"] for c in data] == [c.pk for c in reversed(chats)]
    assert {c["status"] for c in data} == {"active", "ready", "expired", "spam"}


def test_every_filter_shape_pages_like_the_orm(api, widget, other_widget):
    """The list runs a statement compiled once per filter shape (apps.platform.statements): every shape,
    page after page by next_cursor, serves what the ORM's filters give, and nothing of another widget."""
    base = timezone.now().replace(microsecond=0) - timedelta(days=10)
    same_moment = base + timedelta(days=5)
    for i in range(12):
        chat = chat_of(
            widget,
            status=("active", "ready", "expired")[i % 3],
            channel=("widget", "tg")[i % 2],
            has_client_messages=i % 4 == 0,
        )
        # three chats share one created_at: the id breaks the tie across pages
        at = same_moment if i in (4, 5, 6) else base + timedelta(days=i % 9, hours=i)
        Chat.objects.filter(pk=chat.pk).update(created_at=at)
    chat_of(other_widget, status="active")
    client = api(scopes=["chats:read"])
    start, end = base + timedelta(days=2), base + timedelta(days=8)
    cases = [
        ({}, {}),
        ({"status": "ready"}, {"status": "ready"}),
        ({"channel": "tg"}, {"channel": "tg"}),
        ({"has_client_messages": "1"}, {"has_client_messages": True}),
        ({"has_client_messages": "0", "status": "active"}, {"has_client_messages": False, "status": "active"}),
        ({"from": start.isoformat()}, {"created_at__gte": start}),
        ({"to": end.isoformat(), "channel": "widget"}, {"created_at__lt": end, "channel": "widget"}),
        (
            {"from": start.isoformat(), "to": end.isoformat(), "status": "expired"},
            {"created_at__gte": start, "created_at__lt": end, "status": "expired"},
        ),
    ]
    for params, orm in cases:
        expected = list(
            Chat.objects.filter(widget=widget, **orm).order_by("-created_at", "-id").values_list("id", flat=True)
        )
        served, cursor = [], None
        for _ in range(20):
            body = client.get("/api/v1/chats", {**params, "limit": 2, **({"cursor": cursor} if cursor else {})}).json()
            served += [c["id"] for c in body["data"]]
            cursor = body["next_cursor"]
            if cursor is None:
                break
        assert served == expected, params
        assert expected, params  # every case selects something


def test_a_list_without_filters_builds_no_query_serializer(api, widget, monkeypatch):
    from apps.chats.api.filters import ChatListQuery

    chat = chat_of(widget)
    built = []
    monkeypatch.setattr(ChatListQuery, "is_valid", lambda self, **kw: built.append(self) or True)
    assert [c["id"] for c in api().get("/api/v1/chats").json()["data"]] == [chat.pk]
    assert built == []
    # a filter is still validated by it (and refused when bad)
    monkeypatch.undo()
    assert_problem(api().get("/api/v1/chats?status=nope"), 422)


def test_list_shape(api, widget):
    chat = chat_of(widget)
    row = api().get("/api/v1/chats").json()["data"][0]
    assert row["id"] == chat.pk and row["client_id"] == chat.contact.guid
    assert row["accepted_by"] is None and row["handled_by"] is None and row["handling"] == "missed"


def test_a_list_item_is_the_chat_as_read_alone(api, widget):
    """The list builds its items from rows, the single read from the model: the same payload."""
    agent = AgentFactory(widget=widget)
    chat = chat_of(widget, status="ready", channel="tg", agent=agent, handling="human")
    MessageFactory(chat=chat)
    at = timezone.now() - timedelta(minutes=3)
    Chat.objects.filter(pk=chat.pk).update(
        accepted_by=agent,
        accepted_by_type="human",
        accepted_at=at,
        handled_by=agent,
        handled_by_type="human",
        handled_at=at + timedelta(seconds=1),
    )
    client = api()
    listed = client.get("/api/v1/chats").json()["data"]
    alone = client.get(f"/api/v1/chats/{chat.pk}").json()
    assert listed == [alone]
    assert alone["accepted_by"] == {"agent_id": agent.pk, "type": "human", "at": at.isoformat()}
    assert alone["last_message_id"] is not None and alone["last_message_at"] is not None


def test_list_never_shows_other_widgets(api, widget, other_widget):
    chat_of(other_widget)
    assert api().get("/api/v1/chats").json()["data"] == []


@pytest.mark.parametrize("status", ["active", "ready", "expired", "spam"])
def test_filter_by_status(api, widget, status):
    for s in ("active", "ready", "expired", "spam"):
        chat_of(widget, status=s)
    data = api().get("/api/v1/chats", {"status": status}).json()["data"]
    assert [c["status"] for c in data] == [status]


def test_filter_by_channel(api, widget):
    contact = ContactFactory(widget=widget)
    ChatFactory(contact=contact, channel="widget")
    tg = ChatFactory(contact=contact, channel="tg")
    data = api().get("/api/v1/chats", {"channel": "tg"}).json()["data"]
    assert [c["id"] for c in data] == [tg.pk]


def test_has_client_messages_keeps_chats_where_the_visitor_wrote(api, widget):
    wrote = chat_of(widget)
    MessageFactory(chat=wrote)
    silent = chat_of(widget)
    MessageFactory(chat=silent, author_kind=Message.Author.AGENT)
    client = api()
    assert [c["id"] for c in client.get("/api/v1/chats", {"has_client_messages": 1}).json()["data"]] == [wrote.pk]
    assert [c["id"] for c in client.get("/api/v1/chats", {"has_client_messages": 0}).json()["data"]] == [silent.pk]


def test_q_matches_visible_text_only_including_cyrillic(api, widget):
    hit = chat_of(widget)
    MessageFactory(chat=hit, body="Здравствуйте, где мой заказ?")
    note_only = chat_of(widget)
    MessageFactory(chat=note_only, body="заказ проверен", visibility=Message.Visibility.NOTE)
    data = api().get("/api/v1/chats", {"q": "заказ"}).json()["data"]
    assert [c["id"] for c in data] == [hit.pk]


def test_q_does_not_cross_tenants(api, widget, other_widget):
    MessageFactory(chat=chat_of(other_widget), body="secret word")
    assert api().get("/api/v1/chats", {"q": "secret"}).json()["data"] == []


@pytest.mark.parametrize("q", ["a", "x" * 101, " "])
def test_q_outside_2_to_100_characters_is_422(api, q):
    body = assert_problem(api().get("/api/v1/chats", {"q": q}), 422)
    assert "q" in body["errors"]


def test_from_to_bound_creation_time_in_moscow(api, widget):
    # 2026-03-01 00:30 Moscow is 2026-02-28 21:30 UTC.
    from datetime import datetime
    from zoneinfo import ZoneInfo

    msk = ZoneInfo("Europe/Moscow")
    before = chat_of(widget, created_at=datetime(2026, 2, 28, 23, 59, tzinfo=msk))
    inside = chat_of(widget, created_at=datetime(2026, 3, 1, 0, 30, tzinfo=msk))
    after = chat_of(widget, created_at=datetime(2026, 3, 2, 0, 0, tzinfo=msk))
    data = api().get("/api/v1/chats", {"from": "2026-03-01", "to": "2026-03-02"}).json()["data"]
    assert [c["id"] for c in data] == [inside.pk]
    assert before.pk and after.pk


def test_explicit_offset_is_honoured(api, widget):
    from datetime import datetime

    chat = chat_of(widget, created_at=datetime(2026, 3, 1, 12, 0, tzinfo=UTC))
    client = api()
    assert client.get("/api/v1/chats", {"from": "2026-03-01T12:00:00+00:00"}).json()["data"][0]["id"] == chat.pk
    assert client.get("/api/v1/chats", {"from": "2026-03-01T12:00:01Z"}).json()["data"] == []


@pytest.mark.parametrize(
    "params",
    [
        {"status": "closed"},
        {"has_client_messages": "yes"},
        {"from": "yesterday"},
        {"colour": "red"},
        {"from": "2026-03-02", "to": "2026-03-01"},
    ],
)
def test_bad_filters_are_422(api, params):
    assert_problem(api().get("/api/v1/chats", params), 422)


def _queries(client, path, params=None) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        assert client.get(path, params or {}).status_code == 200
    return len([q for q in ctx.captured_queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))])


def test_list_query_count_does_not_grow_with_rows(api, widget):
    client = api()
    MessageFactory(chat=chat_of(widget))
    client.get("/api/v1/chats")  # warm the token's last_used_at
    one = _queries(client, "/api/v1/chats", {"limit": 50})
    for _ in range(30):
        MessageFactory(chat=chat_of(widget))
    assert _queries(client, "/api/v1/chats", {"limit": 50}) == one
    # token lookup + the page (+ up to 4 for the database rate-limit budget without Redis)
    assert one <= 6


def test_list_needs_chats_read(api):
    assert_problem(api(scopes=["chats:write"]).get("/api/v1/chats"), 403, "missing_scope")


def test_list_needs_a_token(client):
    assert_problem(client.get("/api/v1/chats"), 401)


# --- retrieve --------------------------------------------------------------------------------------


def test_retrieve(api, widget):
    chat = chat_of(widget)
    assert api().get(f"/api/v1/chats/{chat.pk}").json()["id"] == chat.pk


def test_retrieve_foreign_is_404_like_missing(api, other_widget):
    foreign = chat_of(other_widget)
    a = assert_problem(api().get(f"/api/v1/chats/{foreign.pk}"), 404)
    b = assert_problem(api().get(f"/api/v1/chats/{foreign.pk + 100}"), 404)
    assert {**a, "instance": ""} == {**b, "instance": ""}


@pytest.mark.parametrize(
    "key", ["abc", "-1", "0", "1.5", "9223372036854775808", "99999999999999999999999999", "1" * 5000, "%20"]
)
def test_a_key_that_is_no_chat_id_is_404_like_missing(api, widget, key):
    """The chat routes look their chat up through a compiled statement (compiled_lookup): a key
    that is not a whole number in the column's range finds nothing (without reaching the database),
    and one in range but matching no chat finds nothing either."""
    chat_of(widget)
    missing = assert_problem(api().get("/api/v1/chats/999999999"), 404)
    for response in (
        api().get(f"/api/v1/chats/{key}"),
        api(scopes=["messages:write"]).post(
            f"/api/v1/chats/{key}/messages", {"type": "text", "body": "x"}, format="json", **idem()
        ),
    ):
        assert {**assert_problem(response, 404), "instance": ""} == {**missing, "instance": ""}


def test_the_chat_lookup_is_one_statement_with_the_contact_joined(api, widget):
    chat = chat_of(widget)
    client = api()
    client.get(f"/api/v1/chats/{chat.pk}")  # the token looked up and the statement compiled
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(f"/api/v1/chats/{chat.pk}").json()["client_id"] == chat.contact.guid
    lookups = [q["sql"] for q in ctx.captured_queries if 'FROM "chats_chat"' in q["sql"]]
    assert len(lookups) == 1 and 'INNER JOIN "chats_contact"' in lookups[0]


# --- close and state ----------------------------------------------------------------------------------


def test_close_moves_to_expired_and_emits_chat_closed(api, widget, captured_events):
    chat = chat_of(widget)
    response = api().post(f"/api/v1/chats/{chat.pk}/close", {"reason": "resolved"}, format="json", **idem())
    assert response.status_code == 200 and response.json()["status"] == "expired"
    assert captured_events() == [
        ("chat.closed", {"chat_id": chat.pk, "reason": "resolved", "button_guid": widget.button_guid})
    ]


def test_close_without_reason_says_expired(api, widget, captured_events):
    chat = chat_of(widget)
    api().post(f"/api/v1/chats/{chat.pk}/close", format="json", **idem())
    assert captured_events()[0][1]["reason"] == "expired"


def test_closing_an_expired_chat_is_200_without_a_second_event(api, widget, captured_events):
    chat = chat_of(widget, status="expired")
    response = api().post(f"/api/v1/chats/{chat.pk}/close", {}, format="json", **idem())
    assert response.status_code == 200 and response.json()["status"] == "expired"
    assert captured_events() == []


def test_close_spam_is_409(api, widget):
    chat = chat_of(widget, status="spam")
    assert_problem(api().post(f"/api/v1/chats/{chat.pk}/close", {}, format="json", **idem()), 409)


def test_close_needs_idempotency_key(api, widget):
    chat = chat_of(widget)
    assert_problem(api().post(f"/api/v1/chats/{chat.pk}/close", {}, format="json"), 400, "idempotency_key_missing")
    chat.refresh_from_db()
    assert chat.status == "active"


def test_close_foreign_is_404(api, other_widget):
    chat = chat_of(other_widget)
    assert_problem(api().post(f"/api/v1/chats/{chat.pk}/close", {}, format="json", **idem()), 404)
    chat.refresh_from_db()
    assert chat.status == "active"


def test_close_needs_chats_write(api, widget):
    chat = chat_of(widget)
    assert_problem(api(scopes=["chats:read"]).post(f"/api/v1/chats/{chat.pk}/close", {}, format="json", **idem()), 403)


def test_close_with_unknown_member_is_422(api, widget):
    chat = chat_of(widget)
    body = assert_problem(api().post(f"/api/v1/chats/{chat.pk}/close", {"why": "x"}, format="json", **idem()), 422)
    assert "why" in body["errors"]


STATE_TABLE = [
    # (from, to, expected status code, resulting status, emits chat.closed)
    ("active", "active", 200, "active", False),
    ("active", "ready", 200, "ready", False),
    ("active", "expired", 200, "expired", True),
    ("active", "spam", 200, "spam", False),
    ("ready", "expired", 200, "expired", True),
    ("expired", "active", 200, "active", False),
    ("expired", "expired", 200, "expired", False),
    ("expired", "ready", 200, "ready", False),
    ("spam", "active", 200, "active", False),
    ("spam", "ready", 409, "spam", False),
    ("spam", "expired", 409, "spam", False),
    ("spam", "spam", 409, "spam", False),
]


@pytest.mark.parametrize(("start", "state", "code", "result", "closed"), STATE_TABLE)
def test_state_table(api, widget, captured_events, start, state, code, result, closed):
    chat = chat_of(widget, status=start)
    response = api().post(f"/api/v1/chats/{chat.pk}/state", {"state": state}, format="json", **idem())
    assert response.status_code == code
    chat.refresh_from_db()
    assert chat.status == result
    assert [t for t, _ in captured_events()] == (["chat.closed"] if closed else [])


def test_state_value_outside_the_set_is_422(api, widget):
    chat = chat_of(widget)
    body = assert_problem(
        api().post(f"/api/v1/chats/{chat.pk}/state", {"state": "closed"}, format="json", **idem()), 422
    )
    assert "state" in body["errors"]


def test_status_is_not_a_writable_member(api, widget):
    chat = chat_of(widget)
    body = assert_problem(
        api().post(f"/api/v1/chats/{chat.pk}/state", {"status": "spam"}, format="json", **idem()), 422
    )
    assert "status" in body["errors"]


# --- transfer ----------------------------------------------------------------------------------------------


def test_transfer_to_an_agent_of_this_widget(api, widget, captured_events):
    old, new = AgentFactory(widget=widget), AgentFactory(widget=widget)
    chat = chat_of(widget, agent=old)
    response = api().post(f"/api/v1/chats/{chat.pk}/transfer", {"agent_id": new.pk}, format="json", **idem())
    assert response.status_code == 202
    chat.refresh_from_db()
    assert chat.agent_id == new.pk and chat.handled_by_id == new.pk
    assert ChatTransfer.objects.get(chat=chat).from_agent_id == old.pk
    types = [t for t, _ in captured_events()]
    assert sorted(types) == ["chat.accepted", "chat.assigned", "chat.transferred"]
    assigned = dict(captured_events())["chat.assigned"]
    assert assigned.items() >= {"chat_id": chat.pk, "agent_id": new.pk, "by": "api"}.items()
    transferred = dict(captured_events())["chat.transferred"]
    assert transferred == {
        "chat_id": chat.pk,
        "client_guid": chat.contact.guid,
        "from_operator_id": old.pk,
        "to_operator_id": new.pk,
        "author_type": "OPERATOR",
        "source": "api",
        "button_guid": widget.button_guid,
    }


def test_transfer_to_foreign_agent_is_404_like_missing(api, widget, other_widget):
    chat = chat_of(widget)
    foreign = AgentFactory(widget=other_widget)
    a = assert_problem(
        api().post(f"/api/v1/chats/{chat.pk}/transfer", {"agent_id": foreign.pk}, format="json", **idem()), 404
    )
    b = assert_problem(
        api().post(f"/api/v1/chats/{chat.pk}/transfer", {"agent_id": 999999}, format="json", **idem()), 404
    )
    assert a["detail"] == b["detail"]


def test_transfer_without_agent_is_422(api, widget):
    chat = chat_of(widget)
    assert_problem(api().post(f"/api/v1/chats/{chat.pk}/transfer", {}, format="json", **idem()), 422)


def test_transfer_of_spam_is_409(api, widget):
    chat = chat_of(widget, status="spam")
    agent = AgentFactory(widget=widget)
    assert_problem(
        api().post(f"/api/v1/chats/{chat.pk}/transfer", {"agent_id": agent.pk}, format="json", **idem()), 409
    )


# --- rate-request ------------------------------------------------------------------------------------


def test_rate_request_is_202_and_writes_a_system_message(api, widget):
    chat = chat_of(widget)
    assert api().post(f"/api/v1/chats/{chat.pk}/rate-request", **idem()).status_code == 202
    assert Message.objects.get(chat=chat).origin == "rate_request"


def test_rate_request_rejects_a_body(api, widget):
    chat = chat_of(widget)
    assert_problem(api().post(f"/api/v1/chats/{chat.pk}/rate-request", {"x": 1}, format="json", **idem()), 422)


def test_rate_request_of_a_rated_chat_is_409(api, widget):
    from apps.chats import services

    chat = chat_of(widget)
    services.rate_chat(widget=widget, chat=chat, value=5)
    assert_problem(api().post(f"/api/v1/chats/{chat.pk}/rate-request", **idem()), 409)


# --- lifecycle job -----------------------------------------------------------------------------------------


def test_lifecycle_job_follows_the_state_table(widget, captured_events):
    from apps.chats import services

    now = timezone.now()
    old, young = now - timedelta(minutes=7), now - timedelta(minutes=6, seconds=59)
    idle_active = chat_of(widget)
    MessageFactory(chat=idle_active, created_at=old)
    idle_ready = chat_of(widget, status="ready")
    MessageFactory(chat=idle_ready, created_at=old)
    young_ready = chat_of(widget, status="ready")
    MessageFactory(chat=young_ready, created_at=young)
    young_expired = chat_of(widget, status="expired")
    MessageFactory(chat=young_expired, created_at=young)
    idle_spam = chat_of(widget, status="spam")
    MessageFactory(chat=idle_spam, created_at=old)
    empty = chat_of(widget, status="ready")
    idle_expired = chat_of(widget, status="expired")
    MessageFactory(chat=idle_expired, created_at=old)

    counts = services.sweep_idle_chats(now=now)

    status = {c.pk: c.status for c in Chat.objects.all()}
    assert status[idle_active.pk] == status[idle_ready.pk] == "expired"
    assert status[young_ready.pk] == status[young_expired.pk] == "active"
    assert status[idle_spam.pk] == "spam" and status[empty.pk] == "ready" and status[idle_expired.pk] == "expired"
    closed = sorted(d["chat_id"] for t, d in captured_events() if t == "chat.closed")
    assert closed == sorted([idle_active.pk, idle_ready.pk])
    assert counts == {"expired": 2, "activated": 2}


def test_lifecycle_job_twice_moves_nothing_twice(widget, captured_events):
    from apps.chats import services

    chat = chat_of(widget)
    MessageFactory(chat=chat, created_at=timezone.now() - timedelta(minutes=10))
    services.sweep_idle_chats()
    services.sweep_idle_chats()
    assert [t for t, _ in captured_events()] == ["chat.closed"]


def test_lifecycle_job_in_small_batches(widget):
    from apps.chats import services

    for _ in range(5):
        MessageFactory(chat=chat_of(widget), created_at=timezone.now() - timedelta(minutes=8))
    assert services.sweep_idle_chats(batch_size=2)["expired"] == 5


def test_agent_factory_default_is_human():
    assert AgentFactory.build().type == Agent.Type.HUMAN


@pytest.mark.parametrize("cap", [2000, 1])
def test_q_finds_the_same_chats_through_the_rare_and_the_common_word_paths(api, widget, other_widget, monkeypatch, cap):
    from apps.chats import selectors

    monkeypatch.setattr(selectors, "RARE_MATCH_CAP", cap)
    hits = [chat_of(widget) for _ in range(3)]
    for chat in hits:
        MessageFactory(chat=chat, body="Где мой ЗАКАЗ 50%?")
    MessageFactory(chat=chat_of(widget), body="nothing here")
    MessageFactory(chat=chat_of(other_widget), body="заказ elsewhere")
    data = api().get("/api/v1/chats", {"q": "заказ 50%"}).json()["data"]
    assert [c["id"] for c in data] == [c.pk for c in reversed(hits)]
    assert api().get("/api/v1/chats", {"q": "_%"}).json()["data"] == []
