"""Facts kept by the chat services, against hand-computed figures around Moscow midnight, week and
month edges, and against the direct count (reference.py)."""

from datetime import date

import pytest
from django.db.models import Sum

from apps.chats import services as chat_services
from apps.chats.models import Chat
from apps.chats.services import IDLE_EXPIRY
from apps.chats.tests.factories import ChatFactory, ContactFactory
from apps.stats import facts, selectors
from apps.stats.models import AGENT_COUNTERS, WIDGET_COUNTERS, ChatFacts, DailyAgentFacts, DailyWidgetFacts
from apps.stats.windows import Window

from . import reference
from .conftest import msk

pytestmark = pytest.mark.django_db

ALL = selectors.WIDGET_METRICS + selectors.OPT_IN_METRICS


def figures(widget, start, end) -> dict:
    return selectors.get_widget_stats(widget=widget, window=Window(start, end), metrics=ALL)


def agents(widget, start, end, *agent_list) -> dict[int, dict]:
    rows = selectors.agent_rows(
        widget=widget, window=Window(start, end), agents=list(agent_list), metrics=selectors.AGENT_METRICS
    )
    return {row["agent_id"]: row["metrics"] for row in rows}


def rollups(widget) -> tuple[list, list]:
    """The rollups per key, their shards summed (as the selectors read them), zero rows left out."""

    def rows(model, keys, counters):
        summed = (
            model.objects.filter(widget=widget)
            .values(*keys)
            .annotate(**{f"sum_{name}": Sum(name) for name in counters})
            .order_by()
        )
        return sorted(tuple(row.values()) for row in summed if any(row[f"sum_{name}"] for name in counters))

    return (
        rows(DailyWidgetFacts, ("day", "channel", "is_internal"), WIDGET_COUNTERS),
        rows(DailyAgentFacts, ("agent_id", "day"), AGENT_COUNTERS),
    )


def test_the_conversation_gap_is_the_idle_expiry():
    assert facts.CONVERSATION_GAP == IDLE_EXPIRY


# --- Moscow midnight ----------------------------------------------------------------------------------


def test_a_chat_at_235959_belongs_to_that_day_and_one_at_midnight_to_the_next(widget, talk):
    late = talk.at(msk(2025, 1, 14, 23, 59, 59)).visitor()
    talk.at(msk(2025, 1, 15, 0, 0, 0)).visitor()
    talk.at(msk(2025, 1, 15, 0, 0, 30)).client_says(late)  # the late chat's message lands on the 15th

    jan14 = figures(widget, msk(2025, 1, 14), msk(2025, 1, 15))
    jan15 = figures(widget, msk(2025, 1, 15), msk(2025, 1, 16))
    assert (jan14["chats_total"], jan14["messages_total"]) == (1, 1)
    assert (jan15["chats_total"], jan15["messages_total"]) == (1, 2)
    assert ChatFacts.objects.get(chat=late).day == date(2025, 1, 14)


def test_answering_after_midnight_moves_the_chat_out_of_missed_on_its_creation_day(widget, talk):
    chat = talk.at(msk(2025, 1, 14, 23, 58)).visitor()
    before = figures(widget, msk(2025, 1, 14), msk(2025, 1, 15))
    assert (before["chats_missed"], before["chats_accepted"], before["avg_response_time_seconds"]) == (1, 0, None)

    talk.at(msk(2025, 1, 15, 0, 5)).reply(chat)

    jan14 = figures(widget, msk(2025, 1, 14), msk(2025, 1, 15))
    assert jan14["chats_missed"] == 0
    assert jan14["chats_accepted"] == jan14["chats_accepted_human"] == jan14["chats_handled_human"] == 1
    assert jan14["avg_response_time_seconds"] == 420.0  # 7 minutes from room creation
    assert jan14["avg_first_response_seconds"] == 420.0
    assert jan14["messages_total"] == 1  # the reply was sent on the 15th
    jan15 = figures(widget, msk(2025, 1, 15), msk(2025, 1, 16))
    assert (jan15["chats_total"], jan15["messages_total"]) == (0, 1)


def test_a_window_edge_inside_a_day_counts_exactly_the_minutes_it_covers(widget, talk):
    first = talk.at(msk(2025, 1, 14, 23, 59)).visitor()
    second = talk.at(msk(2025, 1, 15, 0, 0, 59)).visitor()
    talk.at(msk(2025, 1, 15, 0, 1, 30)).reply(second)
    talk.at(msk(2025, 1, 15, 0, 2)).reply(first, talk.ai)
    talk.at(msk(2025, 1, 15, 0, 3)).rate(first, 4)

    window = (msk(2025, 1, 14, 23, 59, 30), msk(2025, 1, 15, 0, 1, 45))  # only `second` and its reply
    got = figures(widget, *window)
    assert got["chats_total"] == 1 and got["chats_accepted_human"] == 1
    assert got["messages_total"] == 2 and got["avg_response_time_seconds"] == 31.0
    assert got["rating_average"] is None
    assert got == reference.widget_stats(widget, *window)
    wider = (msk(2025, 1, 14, 23, 58), msk(2025, 1, 15, 0, 3, 1))
    assert figures(widget, *wider) == reference.widget_stats(widget, *wider)
    assert figures(widget, *wider)["rating_average"] == 4.0


# --- week and month edges ---------------------------------------------------------------------------------


def test_week_period_starts_on_monday_midnight(widget, talk):
    talk.at(msk(2025, 1, 12, 23, 59, 59)).visitor()  # Sunday
    talk.at(msk(2025, 1, 13, 0, 0, 0)).visitor()  # Monday
    talk.at(msk(2025, 1, 15, 10)).visitor()  # Wednesday
    window = Window.for_period("week", now=msk(2025, 1, 15, 12))
    assert selectors.get_widget_stats(widget=widget, window=window, metrics=["chats_total"]) == {"chats_total": 2}
    weeks = selectors.list_buckets(
        widget=widget, window=Window(msk(2025, 1, 6), msk(2025, 1, 20)), interval="week", metrics=["chats_total"]
    )
    assert [(b["from"], b["metrics"]["chats_total"]) for b in weeks] == [(msk(2025, 1, 6), 1), (msk(2025, 1, 13), 2)]


def test_month_period_starts_on_the_first(widget, talk):
    talk.at(msk(2025, 1, 31, 23, 59, 59)).visitor()
    talk.at(msk(2025, 2, 1, 0, 0, 0)).visitor()
    window = Window.for_period("month", now=msk(2025, 2, 10))
    assert selectors.get_widget_stats(widget=widget, window=window, metrics=["chats_total"]) == {"chats_total": 1}
    months = selectors.list_buckets(
        widget=widget, window=Window(msk(2025, 1, 1), msk(2025, 3, 1)), interval="month", metrics=["chats_total"]
    )
    assert [b["metrics"]["chats_total"] for b in months] == [1, 1]


def test_day_buckets_are_dense_and_zero_filled(widget, talk):
    talk.at(msk(2025, 1, 2, 10)).visitor()
    days = selectors.list_buckets(
        widget=widget,
        window=Window(msk(2025, 1, 1), msk(2025, 1, 4)),
        interval="day",
        metrics=selectors.TIMESERIES_METRICS,
    )
    assert [b["metrics"]["chats_total"] for b in days] == [0, 1, 0]
    assert days[0]["metrics"] == dict.fromkeys(selectors.TIMESERIES_METRICS, 0)


# --- attribution ------------------------------------------------------------------------------------


def test_ai_then_human_escalation_and_handled_counts(widget, talk):
    chat = talk.at(msk(2025, 1, 15, 10)).visitor()
    talk.at(msk(2025, 1, 15, 10, 0, 10)).reply(chat, talk.ai)
    got = figures(widget, msk(2025, 1, 15), msk(2025, 1, 16))
    assert (got["chats_accepted_ai"], got["chats_handled_ai"], got["chats_ai_to_human"]) == (1, 1, 0)

    talk.at(msk(2025, 1, 15, 10, 5)).reply(chat, talk.human)
    got = figures(widget, msk(2025, 1, 15), msk(2025, 1, 16))
    assert (got["chats_accepted_ai"], got["chats_accepted_human"]) == (1, 0)  # first answer stays the AI's
    assert (got["chats_handled_ai"], got["chats_handled_human"], got["chats_ai_to_human"]) == (0, 1, 1)
    assert got["avg_response_time_seconds"] == 10.0  # the first reply, whoever sent it


def test_ai_to_human_to_ai_counts_once_in_each_escalation_counter(widget, talk):
    chat = talk.at(msk(2025, 1, 15, 10)).visitor()
    talk.at(msk(2025, 1, 15, 10, 0, 10)).reply(chat, talk.ai)
    talk.at(msk(2025, 1, 15, 10, 5)).reply(chat, talk.human)
    talk.at(msk(2025, 1, 15, 10, 6)).reply(chat, talk.ai)
    talk.at(msk(2025, 1, 15, 10, 7)).reply(chat, talk.human)  # the same escalations again count nothing
    talk.at(msk(2025, 1, 15, 10, 8)).reply(chat, talk.ai)
    day = (msk(2025, 1, 15), msk(2025, 1, 16))
    got = figures(widget, *day)
    assert (got["chats_ai_to_human"], got["chats_human_to_ai"]) == (1, 1)
    direct = reference.widget_stats(widget, *day)
    assert (direct["chats_ai_to_human"], direct["chats_human_to_ai"]) == (1, 1)

    facts.rebuild_widget_facts(widget_id=widget.pk)
    rebuilt = figures(widget, *day)
    assert (rebuilt["chats_ai_to_human"], rebuilt["chats_human_to_ai"]) == (1, 1)
    # a window edge inside the day reads the per-chat facts, not the rollups
    part = figures(widget, msk(2025, 1, 15, 9), msk(2025, 1, 15, 11))
    assert (part["chats_ai_to_human"], part["chats_human_to_ai"]) == (1, 1)


def test_ai_operator_never_has_missed_chats_and_every_agent_is_zero_filled(widget, talk):
    chat = talk.at(msk(2025, 1, 15, 10)).visitor()
    talk.at(msk(2025, 1, 15, 10, 1)).reply(chat, talk.ai)
    rows = agents(widget, msk(2025, 1, 15), msk(2025, 1, 16), talk.human, talk.ai, talk.other)
    assert rows[talk.ai.pk]["chats_missed"] == 0
    assert rows[talk.ai.pk]["chats_accepted"] == rows[talk.ai.pk]["chats_handled"] == 1
    assert rows[talk.ai.pk]["messages_total"] == 1
    assert rows[talk.ai.pk]["chats_total"] == 0  # the AI operator never becomes the routing owner
    assert rows[talk.other.pk] == {
        "chats_total": 0,
        "avg_response_time_seconds": None,
        "messages_total": 0,
        "rating_average": None,
        "rating_distribution": {"1": 0, "2": 0, "3": 0, "4": 0, "5": 0},
        "chats_accepted": 0,
        "chats_handled": 0,
        "chats_transferred_out": 0,
        "chats_transferred_in": 0,
        "chats_missed": 0,
    }


def test_transfers_move_ownership_and_count_on_their_own_day(widget, talk):
    chat = talk.at(msk(2025, 1, 14, 22)).visitor()
    talk.at(msk(2025, 1, 14, 22, 1)).reply(chat, talk.human)
    talk.at(msk(2025, 1, 15, 9)).transfer(chat, talk.other)

    jan14 = agents(widget, msk(2025, 1, 14), msk(2025, 1, 15), talk.human, talk.other)
    assert jan14[talk.human.pk]["chats_total"] == 0 and jan14[talk.other.pk]["chats_total"] == 1
    assert jan14[talk.other.pk]["avg_response_time_seconds"] == 60.0  # owner now, measured from creation
    assert jan14[talk.human.pk]["chats_accepted"] == 1 and jan14[talk.other.pk]["chats_handled"] == 1
    assert jan14[talk.human.pk]["chats_transferred_out"] == 0
    jan15 = agents(widget, msk(2025, 1, 15), msk(2025, 1, 16), talk.human, talk.other)
    assert jan15[talk.human.pk]["chats_transferred_out"] == 1 and jan15[talk.other.pk]["chats_transferred_in"] == 1


def test_ratings_go_to_the_handler_at_rating_time_and_a_re_rating_moves_them(widget, talk):
    chat = talk.at(msk(2025, 1, 15, 10)).visitor()
    talk.at(msk(2025, 1, 15, 10, 1)).reply(chat, talk.human)
    talk.at(msk(2025, 1, 15, 10, 2)).rate(chat, 5)
    talk.at(msk(2025, 1, 15, 10, 3)).transfer(chat, talk.other)
    talk.at(msk(2025, 1, 16, 9)).rate(chat, 2)  # re-rated the next day: the rating keeps its day

    day = agents(widget, msk(2025, 1, 15), msk(2025, 1, 16), talk.human, talk.other)
    assert day[talk.human.pk]["rating_distribution"] == {"1": 0, "2": 0, "3": 0, "4": 0, "5": 0}
    assert day[talk.other.pk]["rating_distribution"]["2"] == 1 and day[talk.other.pk]["rating_average"] == 2.0
    assert figures(widget, msk(2025, 1, 15), msk(2025, 1, 16))["rating_average"] == 2.0
    assert figures(widget, msk(2025, 1, 16), msk(2025, 1, 17))["rating_average"] is None


def test_first_response_starts_at_the_returning_visitors_conversation(widget, talk):
    chat = talk.at(msk(2025, 1, 10, 12)).visitor()  # nobody answers
    talk.at(msk(2025, 1, 12, 12)).client_says(chat)  # comes back two days later: a new conversation
    talk.at(msk(2025, 1, 12, 12, 5)).client_says(chat)  # 5 minutes later: the same conversation
    talk.at(msk(2025, 1, 12, 12, 10)).reply(chat)
    got = figures(widget, msk(2025, 1, 10), msk(2025, 1, 11))
    assert got["avg_response_time_seconds"] == 2 * 86400 + 600.0  # inflated: measured from the room's creation
    assert got["avg_first_response_seconds"] == 600.0
    assert got == reference.widget_stats(widget, msk(2025, 1, 10), msk(2025, 1, 11))


def test_a_room_the_operator_wrote_first_has_no_first_response(widget, talk, clock):
    chat = ChatFactory(contact=ContactFactory(widget=widget), created_at=msk(2025, 1, 15, 9))
    facts.chat_created(chat=chat)
    talk.at(msk(2025, 1, 15, 9, 1)).reply(chat)
    talk.at(msk(2025, 1, 15, 9, 2)).client_says(chat)
    got = figures(widget, msk(2025, 1, 15), msk(2025, 1, 16))
    assert (got["avg_response_time_seconds"], got["avg_first_response_seconds"]) == (60.0, None)


def test_notes_and_rating_requests_are_not_messages(widget, talk):
    from apps.chats import services

    chat = talk.at(msk(2025, 1, 15, 10)).visitor()
    talk.reply(chat, visibility="note")
    services.request_rating(widget=widget, chat=chat)
    got = figures(widget, msk(2025, 1, 15), msk(2025, 1, 16))
    assert (got["messages_total"], got["chats_missed"]) == (1, 1)  # a note answers nobody


def test_internal_department_chats_count_in_totals_but_not_in_channels(widget, talk):
    talk.at(msk(2025, 1, 15, 10)).visitor(channel="tg")
    internal = ChatFactory(contact=ContactFactory(widget=widget), is_internal=True, created_at=msk(2025, 1, 15, 11))
    facts.chat_created(chat=internal)
    window = Window(msk(2025, 1, 15), msk(2025, 1, 16))
    assert selectors.get_widget_stats(widget=widget, window=window, metrics=["chats_total"]) == {"chats_total": 2}
    assert selectors.list_channel_stats(widget=widget, window=window) == [
        {"channel": "tg", "chats_accepted": 0, "chats_accepted_ai": 0, "chats_accepted_human": 0, "chats_missed": 1}
    ]


# --- maintenance ---------------------------------------------------------------------------------------


def test_a_repeated_hook_adds_nothing(widget, talk):
    chat = talk.at(msk(2025, 1, 15, 10)).visitor()
    talk.reply(chat)
    before = rollups(widget)
    facts.chat_changed(chat=Chat.objects.get(pk=chat.pk))
    facts.chat_changed(chat=Chat.objects.get(pk=chat.pk))
    assert rollups(widget) == before


def test_a_chat_made_before_facts_existed_enters_on_its_first_change(widget, talk):
    chat = ChatFactory(contact=ContactFactory(widget=widget), created_at=msk(2025, 1, 15, 9))
    assert not ChatFacts.objects.filter(chat=chat).exists()
    talk.at(msk(2025, 1, 15, 9, 1)).reply(chat)
    got = figures(widget, msk(2025, 1, 15), msk(2025, 1, 16))
    assert (got["chats_total"], got["chats_accepted_human"], got["messages_total"]) == (1, 1, 1)


def test_rebuild_reproduces_the_incremental_facts(widget, talk):
    a = talk.at(msk(2025, 1, 14, 23, 59)).visitor(channel="vk")
    b = talk.at(msk(2025, 1, 15, 0, 0, 1)).visitor()
    talk.at(msk(2025, 1, 15, 0, 2)).reply(a, talk.ai)
    talk.at(msk(2025, 1, 15, 0, 20)).client_says(b)
    talk.at(msk(2025, 1, 15, 0, 21)).reply(b)
    talk.at(msk(2025, 1, 15, 0, 30)).transfer(a, talk.other)
    talk.at(msk(2025, 1, 15, 0, 31)).rate(a, 3)
    talk.at(msk(2025, 1, 15, 0, 32)).rate(a, 4)
    talk.at(msk(2025, 1, 15, 0, 40))
    chat_services.close_chat(widget=widget, chat=Chat.objects.get(pk=a.pk))
    chat_services.close_chat(widget=widget, chat=Chat.objects.get(pk=b.pk))
    talk.at(msk(2025, 1, 15, 0, 50)).client_says(b)  # reopens b
    incremental = rollups(widget)
    snapshots = sorted(ChatFacts.objects.filter(widget=widget).values_list())

    counts = facts.rebuild_widget_facts(widget_id=widget.pk)

    assert counts["chats"] == 2 and counts["messages"] == 6
    assert rollups(widget) == incremental
    assert sorted(ChatFacts.objects.filter(widget=widget).values_list()) == snapshots


def test_the_facts_hold_the_chats_contact_closing_messages_and_latest_rating(widget, talk):
    chat = talk.at(msk(2025, 1, 15, 10)).visitor()
    talk.at(msk(2025, 1, 15, 10, 1)).reply(chat)
    talk.reply(chat, visibility="private")  # a note is not counted
    talk.rate(chat, 2)
    talk.at(msk(2025, 1, 15, 10, 5)).rate(chat, 4)
    chat_services.close_chat(widget=widget, chat=Chat.objects.get(pk=chat.pk))
    row = ChatFacts.objects.get(chat=chat)
    assert (row.contact_id, row.contact_guid) == (chat.contact_id, chat.contact.guid)
    assert (row.closed_at, row.messages, row.rating) == (msk(2025, 1, 15, 10, 5), 2, 4)

    talk.at(msk(2025, 1, 15, 11)).client_says(chat)  # the visitor reopens the room
    row.refresh_from_db()
    assert (row.closed_at, row.messages, row.rating) == (None, 3, 4)
