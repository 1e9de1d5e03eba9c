"""Compiled statements (apps.platform.statements): the ORM's SQL compiled once, rows equal to values()."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.db.models import Count
from django.db.models.functions import Upper
from django.test.utils import CaptureQueriesContext

from apps.core import services
from apps.core.auth.authentication import find_token
from apps.core.models import ApiToken, Widget
from apps.platform import statements
from apps.platform.statements import Slot, Statement
from tests.support.factories import WidgetFactory

pytestmark = pytest.mark.django_db

TOKEN_FIELDS = ("id", "widget_id", "name", "prefix", "scopes", "expires_at", "revoked_at", "created_at")


def tokens_of_widget(*shape):
    (named,) = shape or (False,)
    queryset = ApiToken.objects.filter(widget_id=Slot("widget", Widget._meta.pk))
    if named:
        queryset = queryset.filter(name=Slot("name", ApiToken._meta.get_field("name")))
    return queryset.filter(created_at__lt=Slot("before", ApiToken._meta.get_field("created_at"))).values(*TOKEN_FIELDS)


def test_rows_equal_values_of_the_same_queryset(widget, other_widget):
    expires = datetime(2031, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    issued = services.issue_token(widget=widget, scopes=["chats:read", "chats:write"], name="a")
    ApiToken.objects.filter(prefix=issued.plaintext[:12]).update(expires_at=expires)
    services.issue_token(widget=widget, scopes=["chats:read"], name="b")
    services.issue_token(widget=other_widget, scopes=["chats:read"], name="a")
    before = datetime.now(UTC) + timedelta(minutes=1)
    statement = Statement(tokens_of_widget)

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


def test_tuples_equal_values_list_of_the_same_queryset(widget):
    services.issue_token(widget=widget, scopes=["chats:read", "chats:write"], name="a")
    services.issue_token(widget=widget, scopes=["chats:read"], name="b")
    before = datetime.now(UTC) + timedelta(minutes=1)
    statement = Statement(tokens_of_widget)

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


@pytest.mark.parametrize("shape", ["values", "values_list", "values_list_of_an_expression"])
def test_a_model_statement_compiles_querysets_of_instances_only(widget, shape):
    queryset = Widget.objects.filter(pk=Slot("pk", Widget._meta.pk))
    built = {
        "values": queryset.values("name"),
        "values_list": queryset.values_list("name"),
        "values_list_of_an_expression": queryset.values_list(Upper("name")),
    }[shape]
    with pytest.raises(TypeError):
        statements.ModelStatement(lambda: built).instances(pk=widget.pk)


def test_a_model_statements_annotations_are_attributes_as_the_orm_sets_them(widget):
    def build():
        return (
            ApiToken.objects.select_related("widget")
            .annotate(label=Upper("name"), siblings=Count("widget__api_tokens"))
            .filter(pk=Slot("pk", ApiToken._meta.pk))
        )

    issued = services.issue_token(widget=widget, scopes=["chats:read"], name="annotated")
    services.issue_token(widget=widget, scopes=["chats:read"], name="other")
    token = ApiToken.objects.get(prefix=issued.plaintext[:12])

    (found,) = statements.ModelStatement(build).instances(pk=token.pk)

    expected = (
        ApiToken.objects.select_related("widget")
        .annotate(label=Upper("name"), siblings=Count("widget__api_tokens"))
        .get(pk=token.pk)
    )
    assert (found.pk, found.label, found.siblings) == (expected.pk, expected.label, expected.siblings)
    assert (found.label, found.siblings) == ("ANNOTATED", 2)
    assert found.widget == widget and found.name == "annotated"


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
