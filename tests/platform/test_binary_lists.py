"""Lists go to PostgreSQL as binary arrays (apps.platform.apps.send_lists_in_binary): Django's
bulk_create (one array per column) and the raw statements that pass arrays keep every value exact."""

import pytest
from django.db import connection

from apps.core.models import OutboxEvent
from apps.webhooks import services
from apps.webhooks.models import Delivery

pytestmark = pytest.mark.django_db

# What the text format had to quote or escape, and what it may not lose: quotes, backslashes, braces,
# commas, the word NULL, empty text, white space at the edges, NUL-free Unicode and right-to-left text.
AWKWARD = [
    '{"text":"he said \\"hi\\"","path":"C:\\\\temp"}',
    "{a,b}",
    "NULL",
    "null",
    "",
    "  padded  ",
    "tab\tand\nnewline",
    "Привет, мир",
    "مرحبا",
    "😀 emoji",
]


@pytest.fixture
def postgres():
    if connection.vendor != "postgresql":
        pytest.skip("binary arrays are PostgreSQL's")


def test_a_list_is_dumped_as_a_binary_array(postgres):
    from psycopg.adapt import PyFormat
    from psycopg.types.array import ListBinaryDumper

    connection.ensure_connection()
    assert connection.connection.adapters.get_dumper(list, PyFormat.AUTO) is ListBinaryDumper


def test_bulk_create_keeps_every_value_exact(postgres, widget, monkeypatch):
    import ipaddress

    from apps.platform import outbound

    # the subscription's host resolves to a public address (no DNS here)
    monkeypatch.setattr(outbound.policy, "resolve_host", lambda host, port: [ipaddress.ip_address("93.184.216.34")])
    subscription, _ = services.create_subscription(
        widget=widget, url="https://hooks.example.com/in", events=["message.created"]
    )
    events = [OutboxEvent.objects.create(widget=widget, type="message.created", data={}) for _ in AWKWARD]
    Delivery.objects.bulk_create(
        [
            Delivery(
                widget=widget,
                subscription=subscription,
                event=event,
                event_type="message.created",
                body=text,
                payload={"text": text, "list": [text, None, 1]},
                last_error=text[:200],
            )
            for event, text in zip(events, AWKWARD, strict=True)
        ]
    )
    stored = {row.event_id: row for row in Delivery.objects.filter(subscription=subscription)}
    for event, text in zip(events, AWKWARD, strict=True):
        row = stored[event.pk]
        assert (row.body, row.last_error) == (text, text[:200])
        assert row.payload == {"text": text, "list": [text, None, 1]}


def test_raw_arrays_of_each_kind_round_trip(postgres):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT %s::varchar[], %s::bigint[], %s::integer[], %s::text[]",
            [AWKWARD, [1, 2**40, None], [7, -3], [None, None]],
        )
        texts, bigs, ints, nulls = cursor.fetchone()
    assert texts == AWKWARD
    assert bigs == [1, 2**40, None]
    assert ints == [7, -3]
    assert nulls == [None, None]
