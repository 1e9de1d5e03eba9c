"""Property: on random conversations driven through the chat services, the facts-based figures of
every endpoint equal the direct count over the base tables, for whole-day and arbitrary windows,
and a rebuild from the base tables reproduces the incremental facts."""

from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.stats import facts, selectors
from apps.stats.windows import Window, buckets
from tests.support.factories import WidgetFactory

from . import reference
from .conftest import Conversations, midnight, msk
from .test_facts import ALL, rollups

pytestmark = pytest.mark.django_db

START = msk(2025, 3, 30, 22)  # Sunday evening: the runs cross a Monday and a month's first day
GAPS = st.sampled_from([0, 1, 6, 7, 8, 55, 6 * 60, 23 * 60 + 59, 24 * 60, 3 * 24 * 60])
CHAT = st.integers(0, 50)
OPERATION = st.one_of(
    st.tuples(st.just("visit"), st.sampled_from(["widget", "tg", "vk"])),
    st.tuples(st.just("client"), CHAT),
    st.tuples(st.just("reply"), CHAT, st.sampled_from(["human", "other", "ai"]), st.sampled_from(["public", "note"])),
    st.tuples(st.just("accept"), CHAT, st.sampled_from(["human", "other"])),
    st.tuples(st.just("transfer"), CHAT, st.sampled_from(["human", "other"])),
    st.tuples(st.just("rate"), CHAT, st.integers(1, 5)),
)
STEPS = st.lists(st.tuples(GAPS, st.integers(0, 59), OPERATION), min_size=1, max_size=30)
MINUTES = st.integers(0, 8 * 24 * 60)


def run(talk: Conversations, steps) -> None:
    chats = []
    talk.at(START)
    for gap_minutes, seconds, operation in steps:
        talk.clock.advance(minutes=gap_minutes, seconds=seconds)
        kind, *args = operation
        if kind == "visit":
            chats.append(talk.visitor(channel=args[0]))
            continue
        if not chats:
            continue
        chat = chats[args[0] % len(chats)]
        agent = {"human": talk.human, "other": talk.other, "ai": talk.ai}.get(args[1]) if len(args) > 1 else None
        if kind == "client":
            talk.client_says(chat)
        elif kind == "reply":
            talk.reply(chat, agent, visibility=args[2])
        elif kind == "accept":
            talk.accept(chat, agent)
        elif kind == "transfer":
            talk.transfer(chat, agent)
        elif kind == "rate":
            talk.rate(chat, args[1])


def check_window(widget, talk: Conversations, start, end) -> None:
    window = Window(start, end)
    assert selectors.get_widget_stats(widget=widget, window=window, metrics=ALL) == reference.widget_stats(
        widget, start, end
    )
    assert selectors.list_channel_stats(widget=widget, window=window) == reference.channel_stats(widget, start, end)
    everyone = list(selectors.agents_of(widget).order_by("id"))
    rows = selectors.agent_rows(widget=widget, window=window, agents=everyone, metrics=selectors.AGENT_METRICS)
    assert {row["agent_id"]: row["metrics"] for row in rows} == reference.agent_stats(widget, start, end)
    series = selectors.list_buckets(widget=widget, window=window, interval="day", metrics=selectors.TIMESERIES_METRICS)
    expected = []
    for a, b, _, _ in buckets(window, "day"):
        direct = reference.widget_stats(widget, a, b)
        expected.append({"from": a, "to": b, "metrics": {m: direct[m] for m in selectors.TIMESERIES_METRICS}})
    assert series == expected


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=STEPS, edges=st.tuples(MINUTES, MINUTES))
def test_facts_equal_the_direct_count_on_random_conversations(clock, steps, edges):
    widget = WidgetFactory()
    talk = Conversations(widget, clock)
    run(talk, steps)

    last_day = clock.now().astimezone(START.tzinfo).date()
    check_window(widget, talk, midnight(START.date()), midnight(last_day + timedelta(days=1)))
    a, b = sorted(edges)
    if a != b:  # arbitrary edges: partial days at both ends
        check_window(widget, talk, START - timedelta(hours=1) + timedelta(minutes=a), START + timedelta(minutes=b))

    incremental = rollups(widget)
    facts.rebuild_widget_facts(widget_id=widget.pk)
    assert rollups(widget) == incremental
