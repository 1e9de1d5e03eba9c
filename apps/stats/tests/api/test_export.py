"""GET /v1/chats/export: one row per chat created in the window, as CSV or JSON Lines, streamed."""

import csv
import importlib
import io
import json
from datetime import date, timedelta

import pytest
from django.core.signals import request_finished
from django.db import close_old_connections, connection
from django.test.utils import CaptureQueriesContext

from apps.agents.tests.factories import DepartmentFactory
from apps.chats import services as chat_services
from apps.chats.models import Chat
from apps.chats.tests.factories import ContactFactory
from apps.erasure.models import PendingErasure
from apps.stats import export, facts
from apps.stats.windows import Window, midnight
from tests.support.factories import WidgetFactory
from tests.support.plugin import assert_problem

from ..conftest import Conversations, msk

pytestmark = pytest.mark.django_db

EXPORT = "/api/v1/chats/export"
JAN15 = {"from": "2025-01-15", "to": "2025-01-16"}


def body_of(response) -> str:
    assert response.status_code == 200, response.content
    assert response.streaming
    return b"".join(response.streaming_content).decode()


def close_unread(response) -> None:
    """Close a response as the server does when its client went away, keeping the test's database
    connection (as the test client does around a streamed response's close)."""
    request_finished.disconnect(close_old_connections)
    try:
        response.close()
    finally:
        request_finished.connect(close_old_connections)


def jsonl(response) -> list[dict]:
    return [json.loads(line) for line in body_of(response).splitlines()]


@pytest.fixture
def day(talk, widget):
    """Jan 15 (Moscow): a missed widget chat; a tg chat the AI answered, handed to a person (closed 10
    minutes after it opened, rated 4 then 5, its contact tagged, the chat labelled); a vk chat a person answered with a
    private note as well."""
    missed = talk.at(msk(2025, 1, 15, 9)).visitor()
    contact = ContactFactory(widget=widget)
    chat_services.add_tags(widget=widget, contact=contact, names=["vip", "b2b"])
    tg = talk.at(msk(2025, 1, 15, 10)).visitor(channel="tg", contact=contact)
    talk.at(msk(2025, 1, 15, 10, 0, 30)).reply(tg, talk.ai)
    talk.at(msk(2025, 1, 15, 10, 1)).accept(tg, talk.human)
    talk.at(msk(2025, 1, 15, 10, 2)).reply(tg, talk.human)
    talk.at(msk(2025, 1, 15, 10, 3)).rate(tg, 4)
    talk.at(msk(2025, 1, 15, 10, 4)).rate(tg, 5)
    talk.at(msk(2025, 1, 15, 10, 10))
    chat_services.close_chat(widget=widget, chat=Chat.objects.get(pk=tg.pk))
    for name in ("vip", "Refund", "unused"):
        chat_services.create_label(widget=widget, name=name)
    chat_services.set_chat_labels(widget=widget, chat=tg, names=["vip", "refund"], by="api")
    vk = talk.at(msk(2025, 1, 15, 11)).visitor(channel="vk")
    talk.at(msk(2025, 1, 15, 11, 1, 30)).reply(vk, talk.human)
    talk.at(msk(2025, 1, 15, 11, 2)).reply(vk, talk.human, visibility="private")
    talk.at(msk(2025, 1, 16, 9)).visitor()  # the next day: outside the window
    return missed, Chat.objects.get(pk=tg.pk), Chat.objects.get(pk=vk.pk)


def test_jsonl_rows_hold_every_column_for_hand_made_chats(api, day):
    missed, tg, vk = day
    rows = jsonl(api(scopes=["chats:read"]).get(EXPORT, {**JAN15, "format": "jsonl"}))
    assert [row["id"] for row in rows] == [missed.pk, tg.pk, vk.pk]
    assert all(list(row) == list(export.COLUMNS) for row in rows)
    assert rows[0] == {
        "id": missed.pk,
        "channel": "widget",
        "created_at": "2025-01-15T06:00:00+00:00",
        "closed_at": None,
        "contact_id": missed.contact.guid,
        "department_id": None,
        "first_response_seconds": None,
        "duration_seconds": None,
        "messages": 1,
        "accepted_by_type": None,
        "handled_by_type": None,
        "ai_to_human": False,
        "human_to_ai": False,
        "rating": None,
        "tags": [],
        "assigned_by": None,
        "sla_breached": False,
        "labels": [],
    }
    assert rows[1] == {
        "id": tg.pk,
        "channel": "tg",
        "created_at": "2025-01-15T07:00:00+00:00",
        "closed_at": "2025-01-15T07:10:00+00:00",
        "contact_id": tg.contact.guid,
        "department_id": None,
        "first_response_seconds": 30.0,
        "duration_seconds": 600,
        "messages": 3,
        "accepted_by_type": "ai",
        "handled_by_type": "human",
        "ai_to_human": True,
        "human_to_ai": False,
        "rating": 5,
        "tags": ["b2b", "vip"],
        "assigned_by": "agent",
        "sla_breached": False,
        "labels": ["Refund", "vip"],
    }
    # the private note is not a counted message
    assert (rows[2]["messages"], rows[2]["first_response_seconds"], rows[2]["handled_by_type"]) == (2, 90.0, "human")


def test_csv_has_a_header_and_spells_booleans_nulls_and_tags(api, day):
    missed, tg, _ = day
    response = api().get(EXPORT, JAN15)
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="chats-20250115T0000-20250116T0000.csv"'
    table = list(csv.reader(io.StringIO(body_of(response))))
    assert table[0] == list(export.COLUMNS)
    assert len(table) == 4
    by_id = {int(line[0]): dict(zip(export.COLUMNS, line, strict=True)) for line in table[1:]}
    assert by_id[tg.pk]["tags"] == "b2b,vip" and by_id[tg.pk]["ai_to_human"] == "true"
    assert by_id[tg.pk]["labels"] == "Refund,vip" and by_id[missed.pk]["labels"] == ""
    assert by_id[tg.pk]["rating"] == "5" and by_id[tg.pk]["duration_seconds"] == "600"
    assert by_id[missed.pk]["closed_at"] == "" and by_id[missed.pk]["rating"] == ""
    assert by_id[missed.pk]["human_to_ai"] == "false"


def test_contact_id_is_the_contacts_guid_in_csv_and_json_lines(api, day):
    chats = day
    guids = [chat.contact.guid for chat in chats]
    assert all(len(guid) == 32 for guid in guids) and len(set(guids)) == 3
    lines = jsonl(api().get(EXPORT, {**JAN15, "format": "jsonl"}))
    assert [row["contact_id"] for row in lines] == guids
    table = list(csv.DictReader(io.StringIO(body_of(api().get(EXPORT, JAN15)))))
    assert [row["contact_id"] for row in table] == guids
    # the guid is the contact's id in the contacts API
    contact = api().get(f"/api/v1/contacts/{guids[1]}").json()
    assert contact["id"] == guids[1]


def test_rows_from_before_the_guid_column_get_it_from_their_contact(api, day):
    from django.apps import apps as registry

    from apps.stats.models import ChatFacts

    migration = importlib.import_module("apps.stats.migrations.0006_chatfacts_contact_guid")
    ChatFacts.objects.update(contact_guid="")
    migration.from_contacts(registry, None)
    assert [row["contact_id"] for row in jsonl(api().get(EXPORT, {**JAN15, "format": "jsonl"}))] == [
        chat.contact.guid for chat in day
    ]


def test_an_offset_in_the_window_is_honoured_and_the_moscow_day_is_the_default(api, day):
    _, tg, vk = day
    rows = jsonl(api().get(EXPORT, {"from": "2025-01-15T07:00:00Z", "to": "2025-01-16", "format": "jsonl"}))
    assert [row["id"] for row in rows] == [tg.pk, vk.pk]


def test_only_the_tokens_widget_and_no_contact_under_erasure(api, widget, day, clock):
    missed, tg, vk = day
    other = WidgetFactory()
    Conversations(other, clock).at(msk(2025, 1, 15, 12)).visitor()
    PendingErasure.objects.create(widget=widget, contact_id=vk.contact_id)
    rows = jsonl(api().get(EXPORT, {**JAN15, "format": "jsonl"}))
    assert [row["id"] for row in rows] == [missed.pk, tg.pk]


def test_an_empty_window_is_a_header_alone(api, widget):
    assert body_of(api().get(EXPORT, JAN15)).splitlines() == [",".join(export.COLUMNS)]
    assert body_of(api().get(EXPORT, {**JAN15, "format": "jsonl"})) == ""


def test_pages_stream_with_a_fixed_number_of_queries_each(api, widget, talk, monkeypatch):
    monkeypatch.setattr(export, "PAGE_SIZE", 2)
    for minute in range(5):
        talk.at(msk(2025, 1, 15, 10, minute)).visitor()
    pages = export.export_pages(widget_id=widget.pk, window=_window(JAN15))
    with CaptureQueriesContext(connection) as queries:
        first = next(pages)
    assert len(first) == 2 and len(queries) == 1  # the facts page: messages, rating and tags within
    rest = list(pages)
    assert [len(page) for page in rest] == [2, 1]
    ids = [row[0] for row in first + rest[0] + rest[1]]
    assert ids == sorted(ids) and len(set(ids)) == 5


def test_timestamps_keep_their_microseconds_and_a_deleted_department_reads_as_none(api, widget, talk):
    department = DepartmentFactory(widget=widget)
    chat = talk.at(msk(2025, 1, 15, 10) + timedelta(microseconds=500)).visitor()
    Chat.objects.filter(pk=chat.pk).update(department=department)
    facts.chat_changed(chat=Chat.objects.get(pk=chat.pk))
    talk.at(msk(2025, 1, 15, 10, 1, 2) + timedelta(microseconds=123456))
    chat_services.close_chat(widget=widget, chat=Chat.objects.get(pk=chat.pk))
    [row] = jsonl(api().get(EXPORT, {**JAN15, "format": "jsonl"}))
    assert (row["created_at"], row["closed_at"], row["duration_seconds"], row["department_id"]) == (
        "2025-01-15T07:00:00.000500+00:00",
        "2025-01-15T07:01:02.123456+00:00",
        62,
        department.pk,
    )
    department.delete()
    [row] = jsonl(api().get(EXPORT, {**JAN15, "format": "jsonl"}))
    assert row["department_id"] is None


def _window(params) -> Window:
    return Window(midnight(date.fromisoformat(params["from"])), midnight(date.fromisoformat(params["to"])))


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"to": "2025-01-16"}, "from"),
        ({"from": "2025-01-15"}, "to"),
        ({"from": "2025-01-16", "to": "2025-01-15"}, "to"),
        ({"from": "2024-01-01", "to": "2025-01-02"}, "to"),
        ({**JAN15, "format": "xlsx"}, "format"),
        ({**JAN15, "period": "today"}, "period"),
        ({**JAN15, "from": "yesterday"}, "from"),
    ],
)
def test_bad_queries_are_422_naming_the_parameter(api, widget, params, field):
    body = assert_problem(api().get(EXPORT, params), 422)
    assert set(body["errors"]) == {field}


def test_a_window_of_366_days_is_allowed(api, widget):
    assert api().get(EXPORT, {"from": "2024-01-01", "to": "2025-01-01"}).status_code == 200


def test_the_export_needs_chats_read(api, widget):
    assert_problem(api(scopes=["stats:read"]).get(EXPORT, JAN15), 403)


@pytest.mark.parametrize("tag", ["=1+2", "+1+2", "-1+2", "@SUM(1)", '=HYPERLINK("http://x.test","y")'])
def test_a_csv_tag_cell_a_spreadsheet_would_read_as_a_formula_is_spelled_as_text(api, widget, talk, tag):
    contact = ContactFactory(widget=widget)
    chat_services.add_tags(widget=widget, contact=contact, names=[tag, "vip"])
    chat = talk.at(msk(2025, 1, 15, 10)).visitor(contact=contact)
    table = list(csv.reader(io.StringIO(body_of(api().get(EXPORT, JAN15)))))
    [row] = [dict(zip(export.COLUMNS, line, strict=True)) for line in table[1:]]
    assert row["id"] == str(chat.pk)
    assert row["tags"] == f"'{tag},vip"
    # JSON Lines carries the names as they are
    [line] = jsonl(api().get(EXPORT, {**JAN15, "format": "jsonl"}))
    assert line["tags"] == sorted([tag, "vip"])


# --- at most two exports of a widget stream at once ---------------------------------------------------------


def test_a_third_export_while_two_stream_is_429_and_a_finished_or_dropped_one_frees_its_slot(api, widget, day):
    client = api(scopes=["chats:read"])
    first, second = client.get(EXPORT, JAN15), client.get(EXPORT, JAN15)  # open, nothing read yet
    refused = client.get(EXPORT, JAN15)
    problem = assert_problem(refused, 429)
    assert problem["code"] == "rate_limited" and refused["Retry-After"] == str(export.RETRY_AFTER_SECONDS)
    # another widget's exports are its own
    other = WidgetFactory()
    assert api(w=other, scopes=["chats:read"]).get(EXPORT, JAN15).status_code == 200
    # read to the end, an export frees its slot (the server closes the response)
    assert len(body_of(first).splitlines()) == 4
    third = client.get(EXPORT, JAN15)
    assert third.status_code == 200
    assert_problem(client.get(EXPORT, JAN15), 429)
    # a response closed before a byte was read (the client went away) frees its slot too
    close_unread(second)
    assert len(body_of(client.get(EXPORT, JAN15)).splitlines()) == 4
    close_unread(third)


def test_an_export_is_503_and_starts_nothing_when_the_slot_store_fails(api, widget, monkeypatch):
    def unavailable(slots, *parts):
        raise export.SlotStoreUnavailable("down")

    monkeypatch.setattr(type(export.IN_FLIGHT), "acquire", unavailable)
    monkeypatch.setattr(export, "export_pages", lambda **kwargs: pytest.fail("the export started"))
    assert assert_problem(api().get(EXPORT, JAN15), 503)["code"] == "service_unavailable"
