"""Compiled statements (apps.core.statements): the ORM's SQL compiled once, rows equal to values()."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.db.models.functions import Upper
from django.test.utils import CaptureQueriesContext

from apps.core import services, statements
from apps.core.auth.authentication import find_token
from apps.core.models import ApiToken, Widget
from apps.core.statements import Slot, Statement, insert_new, run_prepared
from apps.core.testing.factories import WidgetFactory

pytestmark = pytest.mark.django_db

TOKEN_FIELDS = ("id", "widget_id", "name", "prefix", "scopes", "expires_at", "revoked_at", "created_at")


def tokens_of_widget(*shape):
    (named,) = shape or (False,)
    queryset = ApiToken.objects.filter(widget_id=Slot("widget", Widget._meta.pk))
    if named:
        queryset = queryset.filter(name=Slot("name", ApiToken._meta.get_field("name")))
    return queryset.filter(created_at__lt=Slot("before", ApiToken._meta.get_field("created_at"))).values(*TOKEN_FIELDS)


@pytest.mark.parametrize("prepared", [False, True], ids=["client-bound", "prepared"])
def test_rows_equal_values_of_the_same_queryset(widget, other_widget, prepared):
    expires = datetime(2031, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    issued = services.issue_token(widget=widget, scopes=["chats:read", "chats:write"], name="a")
    ApiToken.objects.filter(prefix=issued.plaintext[:12]).update(expires_at=expires)
    services.issue_token(widget=widget, scopes=["chats:read"], name="b")
    services.issue_token(widget=other_widget, scopes=["chats:read"], name="a")
    before = datetime.now(UTC) + timedelta(minutes=1)
    statement = Statement(tokens_of_widget, prepared=prepared)

    for shape, values, orm in [
        ((False,), {}, {}),
        ((True,), {"name": "a"}, {"name": "a"}),
        ((True,), {"name": "nobody"}, {"name": "nobody"}),
    ]:
        rows = statement.rows(shape, widget=widget.pk, before=before, **values)
        expected = list(
            ApiToken.objects.filter(widget=widget, created_at__lt=before, **orm).values(*TOKEN_FIELDS).order_by("id")
        )
        assert sorted(rows, key=lambda r: r["id"]) == expected
    # the converters ran: JSON is a list, datetimes are aware and exact (SQLite returns text for both)
    (row,) = statement.rows((True,), widget=widget.pk, before=before, name="a")
    assert row["scopes"] == ["chats:read", "chats:write"]
    assert row["expires_at"] == expires
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            mine = '%"core_apitoken"."created_at" < ($%'  # this statement's SQL, not the token lookup's
            cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s", [mine])
            assert cursor.fetchone()[0] == (2 if prepared else 0)  # one per shape


@pytest.mark.parametrize("prepared", [False, True], ids=["client-bound", "prepared"])
def test_tuples_equal_values_list_of_the_same_queryset(widget, prepared):
    services.issue_token(widget=widget, scopes=["chats:read", "chats:write"], name="a")
    services.issue_token(widget=widget, scopes=["chats:read"], name="b")
    before = datetime.now(UTC) + timedelta(minutes=1)
    statement = Statement(tokens_of_widget, prepared=prepared)

    found = statement.tuples((False,), widget=widget.pk, before=before)

    expected = list(ApiToken.objects.filter(widget=widget).values_list(*TOKEN_FIELDS).order_by("id"))
    assert sorted(found) == expected
    assert all(type(row) is tuple for row in found)
    assert {row[4][-1] for row in found} == {"chats:write", "chats:read"}  # converted: lists, not text


def test_rows_name_the_columns_in_the_order_values_gave_them(widget):
    # values() with an annotation before a field: the SQL selects in this order, and so must the names
    services.issue_token(widget=widget, scopes=["chats:read"], name="ordered")
    statement = Statement(
        lambda: (
            ApiToken.objects.filter(widget_id=Slot("widget", Widget._meta.pk))
            .annotate(label=Upper("name"))
            .values("label", "name", "id")
        )
    )
    (row,) = statement.rows(widget=widget.pk)
    (found,) = statement.tuples(widget=widget.pk)
    assert row == {"label": "ORDERED", "name": "ordered", "id": found[2]}
    assert found[:2] == ("ORDERED", "ordered")


def test_a_model_statement_has_no_tuples(widget):
    statement = statements.ModelStatement(lambda: Widget.objects.filter(pk=Slot("pk", Widget._meta.pk)))
    with pytest.raises(TypeError):
        statement.tuples(pk=widget.pk)


def test_the_sql_is_compiled_once_per_shape_and_database(widget):
    calls = []

    def build(*shape):
        calls.append(shape)
        return tokens_of_widget(*shape)

    statement = Statement(build)
    later = datetime.now(UTC) + timedelta(minutes=1)
    for _ in range(3):
        statement.rows((False,), widget=widget.pk, before=later)
        statement.rows((True,), widget=widget.pk, before=later, name="x")
    assert calls == [(False,), (True,)]
    sql, params = statement.sql((True,), widget=7, before=later, name="x")
    assert sql.count("%s") == len(params) == 3
    assert params[0] == 7 and "x" in params


def test_a_slot_is_bound_with_its_fields_preparation(widget):
    """The same value in a slot and in a plain filter reaches the database the same way."""
    at = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    statement = Statement(tokens_of_widget)
    _, bound = statement.sql((False,), widget=widget.pk, before=at)
    field = ApiToken._meta.get_field("created_at")
    assert bound[-1] == field.get_db_prep_value(at, connection)


def test_one_query_and_no_orm_compile_per_run(widget, django_assert_num_queries):
    statement = Statement(tokens_of_widget)
    later = datetime.now(UTC) + timedelta(minutes=1)
    statement.rows((False,), widget=widget.pk, before=later)
    with CaptureQueriesContext(connection) as captured:
        statement.rows((False,), widget=widget.pk, before=later)
    assert len(captured) == 1
    assert captured[0]["sql"].startswith('SELECT "core_apitoken"."id"')


def test_only_values_querysets_compile():
    with pytest.raises(TypeError):
        Statement(lambda: ApiToken.objects.filter(prefix=Slot("p", ApiToken._meta.get_field("prefix")))).rows(p="x")


def test_find_token_loads_the_token_and_its_widget_in_one_query(widget, django_assert_num_queries):
    issued = services.issue_token(widget=widget, scopes=["chats:read"], name="api")
    prefix = issued.plaintext[:12]
    expected = ApiToken.objects.select_related("widget").get(prefix=prefix)
    with django_assert_num_queries(1):
        token = find_token(prefix)
        widget_name = token.widget.name
    for field in ApiToken._meta.concrete_fields:
        assert getattr(token, field.attname) == getattr(expected, field.attname), field.name
    for field in Widget._meta.concrete_fields:
        assert getattr(token.widget, field.attname) == getattr(expected.widget, field.attname), field.name
    assert widget_name == widget.name
    assert token._state.adding is False and token._state.db == "default"
    assert find_token("cwt_00000000") is None


def test_a_token_is_found_only_by_its_own_prefix():
    one, two = WidgetFactory(), WidgetFactory()
    first = services.issue_token(widget=one, scopes=["chats:read"]).plaintext
    second = services.issue_token(widget=two, scopes=["chats:read"]).plaintext
    assert find_token(first[:12]).widget.pk == one.pk
    assert find_token(second[:12]).widget.pk == two.pk


@pytest.mark.postgres
def test_run_prepared_prepares_on_the_server_once_and_only_its_own_statements(widget):
    # Django opens connections with psycopg's preparing off; run_prepared must still prepare
    sql = "SELECT %s::bigint + 1 AS next_id"
    with CaptureQueriesContext(connection) as logged:
        assert [run_prepared(sql, [n]) for n in (1, 2, 3)] == [[(2,)], [(3,)], [(4,)]]
    # the query log has every run's text (a prepared run sends none; the log must still show it)
    assert [query["sql"] for query in logged.captured_queries] == ["SELECT $1::bigint + 1 AS next_id"] * 3
    with connection.cursor() as cursor:
        for _ in range(3):  # the ORM's cursors bind on the client: never prepared, however often run
            cursor.execute("SELECT %s::integer AS same", [7])
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [statement for (statement,) in cursor.fetchall()]
    assert prepared.count("SELECT $1::bigint + 1 AS next_id") == 1
    assert not [statement for statement in prepared if "AS same" in statement]


@pytest.mark.postgres
def test_run_prepared_tells_rows_from_none_without_building_a_description(widget, monkeypatch):
    import psycopg

    def refused(cursor):
        raise AssertionError("description read")

    # psycopg builds a Column per column on every read of `description`; run_prepared needs none
    monkeypatch.setattr(psycopg.Cursor, "description", property(refused))
    assert run_prepared("SELECT %s::bigint AS n WHERE false", [1]) == []  # rows expected, none found
    assert run_prepared("SELECT %s::bigint AS n, 2 AS m", [1]) == [(1, 2)]
    assert run_prepared("SELECT", []) == [()]  # a row of no columns is still a row
    token = services.issue_token(widget=widget, scopes=["chats:read"]).token
    sql = "UPDATE core_apitoken SET name = %s WHERE id = %s"
    assert run_prepared(sql, ["renamed", token.pk]) == []  # no rows: no RETURNING
    assert run_prepared(f"{sql} RETURNING name", ["again", token.pk]) == [("again",)]


@pytest.mark.postgres
def test_insert_new_writes_what_bulk_create_writes_and_skips_conflicts(widget):
    from django.forms.models import model_to_dict

    from apps.core.models import OutboxEvent
    from apps.webhooks.models import Delivery, Subscription

    subscription = Subscription.objects.create(widget=widget, url="https://hooks.example.com/a", events=["x"])
    events = [OutboxEvent.objects.create(widget=widget, type="message.created", data={}) for _ in range(11)]

    def build(n: int, **extra) -> Delivery:
        return Delivery(
            widget=widget,
            subscription=subscription,
            event=extra.pop("event", events[n]),
            event_type="message.created",
            body=f'{{"n": {n}, "text": "кавычки \\" и {{скобки}}"}}',
            payload={"n": n, "nested": [None, "a,b", {"k": "v"}]},
            next_attempt_at=datetime(2026, 1, 1, 12, n, tzinfo=UTC) if n % 2 else None,
            **extra,
        )

    written = [build(n) for n in range(3)]
    expected = [build(n) for n in range(3, 6)]
    Delivery.objects.bulk_create(expected)
    assert insert_new(written, unique="delivery_id") == written
    assert all(row.pk and not row._state.adding for row in written)
    # each row reads back as its object (as bulk_create's rows do: the same check passes for them)
    for row in [*written, *expected]:
        assert model_to_dict(Delivery.objects.get(pk=row.pk)) == model_to_dict(row)
    # a row conflicting with one already there is skipped, not returned: the same delivery id, or the
    # same subscription and event (the partial unique constraint of fan-out running twice)
    same_id = build(8, delivery_id=written[0].delivery_id)
    same_event = build(9, event=events[1])
    fresh = build(10)
    assert insert_new([same_id, fresh, same_event], unique="delivery_id") == [fresh]
    assert Delivery.objects.count() == 7


def _prepared_statements() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [statement for (statement,) in cursor.fetchall()]


@pytest.mark.postgres
def test_insert_writes_what_save_writes_in_one_prepared_statement(widget, django_assert_num_queries):
    from django.forms.models import model_to_dict

    from apps.chats.models import Message
    from apps.chats.tests.factories import ChatFactory
    from apps.core.models import OutboxEvent

    chat = ChatFactory(widget=widget)
    at = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

    def build(**extra) -> Message:
        return Message(widget=widget, chat=chat, type="location", body="там", coords={"lat": 1.5, "lon": -2}, **extra)

    ours, saved = build(created_at=at), build(created_at=at)
    saved.save(force_insert=True)
    with django_assert_num_queries(1):
        statements.insert(ours)
    assert ours.pk and ours.pk != saved.pk and not ours._state.adding and ours._state.db == "default"
    read = model_to_dict(Message.objects.get(pk=ours.pk))
    assert read == {**model_to_dict(saved), "id": ours.pk} == model_to_dict(ours)
    # a column left to pre_save is filled as save() fills it (created_at: auto_now_add)
    event = OutboxEvent(widget=widget, type="message.created", data={"n": None, "quote": 'a " b'})
    statements.insert(event)
    assert OutboxEvent.objects.get(pk=event.pk).data == {"n": None, "quote": 'a " b'}
    assert event.created_at is not None
    assert [s for s in _prepared_statements() if s.startswith('INSERT INTO "chats_message"')]
    assert [s for s in _prepared_statements() if s.startswith('INSERT INTO "core_outboxevent"')]
    # a related object that is not saved is refused as save() refuses it
    with pytest.raises(ValueError, match="unsaved related object"):
        statements.insert(Message(widget=widget, chat=ChatFactory.build(widget=widget), type="text", body="x"))


@pytest.mark.postgres
def test_update_sets_only_the_named_columns_and_refuses_a_missing_row(widget, django_assert_num_queries):
    from django.db import DatabaseError

    from apps.chats.models import Chat
    from apps.chats.tests.factories import ChatFactory

    chat = ChatFactory(widget=widget, status=Chat.Status.ACTIVE)
    Chat.objects.filter(pk=chat.pk).update(status=Chat.Status.READY)  # changed behind the instance's back
    at = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    chat.last_message_at, chat.first_agent_reply_at = at, at
    with django_assert_num_queries(1):
        statements.update(chat, ["last_message_at", "first_agent_reply_at"])
    read = Chat.objects.get(pk=chat.pk)
    assert (read.last_message_at, read.first_agent_reply_at, read.status) == (at, at, Chat.Status.READY)
    assert [s for s in _prepared_statements() if s.startswith('UPDATE "chats_chat"')]
    with django_assert_num_queries(0):
        statements.update(chat, [])
    with pytest.raises(ValueError, match="not a column"):
        statements.update(chat, ["id"])
    Chat.objects.filter(pk=chat.pk).delete()
    with pytest.raises(DatabaseError, match="did not affect any rows"):
        statements.update(chat, ["last_message_at"])


@pytest.mark.django_db
def test_insert_and_update_are_save_for_a_model_with_save_receivers(widget):
    from django.db.models import signals

    from apps.core.models import OutboxEvent

    seen = []

    def receiver(sender, instance, **kwargs):
        seen.append((kwargs.get("created"), kwargs.get("update_fields")))

    signals.post_save.connect(receiver, sender=OutboxEvent)
    try:
        event = OutboxEvent(widget=widget, type="message.created", data={})
        statements.insert(event)
        event.attempts = 3
        statements.update(event, ["attempts"])
    finally:
        signals.post_save.disconnect(receiver, sender=OutboxEvent)
    assert seen == [(True, None), (False, frozenset({"attempts"}))]
    assert OutboxEvent.objects.get(pk=event.pk).attempts == 3
