"""apps.stats.services.apply: a Delta added to the daily rollups, on PostgreSQL in one statement for
both tables (a message adds to both), elsewhere one statement per table."""

from __future__ import annotations

import threading
from datetime import date

import pytest
from django.db import connection, connections, transaction
from django.db.models import Sum
from django.test.utils import CaptureQueriesContext

from apps.chats.tests.factories import ChatFactory
from apps.stats import services
from apps.stats.models import DailyAgentFacts, DailyWidgetFacts
from tests.support.factories import AgentFactory

pytestmark = pytest.mark.django_db

DAY, NEXT = date(2025, 3, 1), date(2025, 3, 2)


def _delta(widget, agents, messages: int) -> services.Delta:
    delta = services.Delta(widget.pk)
    delta.add_widget((DAY, "web", False), {"messages_total": messages})
    delta.add_widget((NEXT, "telegram", True), {"messages_total": 1})
    for agent in agents:
        delta.add_agent((agent.pk, DAY), {"messages_total": messages, "response_ms_sum": 2**40})
    return delta


def _rollups(widget):
    widget_rows = sorted(
        DailyWidgetFacts.objects.filter(widget=widget).values_list("day", "channel", "is_internal", "messages_total")
    )
    agent_rows = sorted(
        DailyAgentFacts.objects.filter(widget=widget).values_list(
            "agent_id", "day", "messages_total", "response_ms_sum"
        )
    )
    return widget_rows, agent_rows


def test_a_delta_is_added_to_both_tables_and_again_on_the_next_write(widget):
    agents = sorted([AgentFactory(widget=widget), AgentFactory(widget=widget)], key=lambda a: a.pk)

    with CaptureQueriesContext(connection) as queries:
        services.apply(_delta(widget, agents, 2))
    services.apply(_delta(widget, agents, 3))

    assert _rollups(widget) == (
        [(DAY, "web", False, 5), (NEXT, "telegram", True, 2)],
        [(agents[0].pk, DAY, 5, 2**41), (agents[1].pk, DAY, 5, 2**41)],
    )
    writes = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("INSERT")]
    assert [w.split()[2] for w in writes] == ['"stats_dailywidgetfacts"', '"stats_dailyagentfacts"']


def test_a_delta_of_one_table_writes_that_table_alone(widget):
    agent = AgentFactory(widget=widget)
    only_widget = services.Delta(widget.pk)
    only_widget.add_widget((DAY, "web", False), {"messages_total": 1})
    only_agent = services.Delta(widget.pk)
    only_agent.add_agent((agent.pk, DAY), {"messages_total": 4})

    with CaptureQueriesContext(connection) as queries:
        services.apply(only_widget)
        services.apply(only_agent)
        services.apply(services.Delta(widget.pk))  # empty: nothing written

    assert _rollups(widget) == ([(DAY, "web", False, 1)], [(agent.pk, DAY, 4, 0)])
    writes = [q["sql"] for q in queries.captured_queries if q["sql"].startswith(("INSERT", "WITH"))]
    assert [w.split(" (")[0] for w in writes] == [
        'INSERT INTO "stats_dailywidgetfacts"',
        'INSERT INTO "stats_dailyagentfacts"',
    ]


def test_deltas_of_two_shards_add_to_rows_of_their_own_that_read_as_one(widget):
    first, second = services.Delta(widget.pk, shard=3), services.Delta(widget.pk, shard=11)
    first.add_widget((DAY, "web", False), {"messages_total": 2})
    second.add_widget((DAY, "web", False), {"messages_total": 5})

    services.apply(first)
    services.apply(second)

    shards = DailyWidgetFacts.objects.filter(widget=widget).values_list("shard", "messages_total").order_by("shard")
    assert list(shards) == [(3, 2), (11, 5)]
    assert _rollups(widget) == ([(DAY, "web", False, 2), (DAY, "web", False, 5)], [])


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_chat_adds_to_its_day_while_another_chats_transaction_holds_its_own_rows(widget):
    # given a transaction that added a message of one chat to the day and has not committed
    first, second = ChatFactory(widget=widget), ChatFactory(widget=widget)
    assert services.shard_of(first.pk) != services.shard_of(second.pk)
    added, release = threading.Event(), threading.Event()

    def hold():
        try:
            with transaction.atomic():
                delta = services.Delta(widget.pk, services.shard_of(first.pk))
                delta.add_widget((DAY, "widget", False), {"messages_total": 1})
                services.apply(delta)
                added.set()
                release.wait(10)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert added.wait(10)
        # when a message of another chat of the widget adds to the same day, channel and flag
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '2s'")
            delta = services.Delta(widget.pk, services.shard_of(second.pk))
            delta.add_widget((DAY, "widget", False), {"messages_total": 1})
            services.apply(delta)  # then it does not wait for the first one's commit
    finally:
        release.set()
        holder.join(10)
    totals = DailyWidgetFacts.objects.filter(widget=widget).aggregate(total=Sum("messages_total"))
    assert totals == {"total": 2}
