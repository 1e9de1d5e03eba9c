"""SLA clocks (product-decisions.md "Routing that never loses a visitor"): which policy a chat takes,
when each clock starts and stops, met and breached, business hours, the routing read's `sla`."""

from datetime import timedelta

import pytest

from apps.agents.models import Agent
from apps.agents.tests.factories import DepartmentFactory
from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.chats.tests.factories import ChatFactory, ContactFactory
from apps.routing import sla
from apps.routing.models import SlaClock
from apps.widget import services as widget_services
from tests.support.factories import AgentFactory

from .sla_support import T0, answer, breaches, clocks, make_policy, say

pytestmark = pytest.mark.django_db
FIRST, NEXT, RESOLUTION = "first_response", "next_response", "resolution"


@pytest.fixture
def at(time_machine):
    """Move the clock: at(seconds after T0)."""

    def move(seconds: float = 0):
        time_machine.move_to(T0 + timedelta(seconds=seconds), tick=False)
        return T0 + timedelta(seconds=seconds)

    move(0)
    return move


@pytest.fixture
def contact(widget):
    return ContactFactory(widget=widget)


@pytest.fixture
def operator(widget):
    return AgentFactory(widget=widget)


def chat_of(message) -> Chat:
    return Chat.objects.get(pk=message.chat_id)


# --- which policy ---------------------------------------------------------------------------------------


def test_without_a_policy_no_clock_starts(widget, contact, at):
    chat = chat_of(say(widget, contact))
    assert clocks(chat) == []


def test_the_first_message_starts_first_response_and_resolution_of_the_default(widget, contact, at):
    policy = make_policy(widget)
    chat = chat_of(say(widget, contact))
    rows = {c.kind: c for c in clocks(chat)}
    assert set(rows) == {FIRST, RESOLUTION}
    assert rows[FIRST].due_at == T0 + timedelta(seconds=300) and rows[FIRST].started_at == T0
    assert rows[RESOLUTION].due_at == T0 + timedelta(seconds=3600)
    assert {c.policy_id for c in rows.values()} == {policy.pk}
    assert all(c.stopped_at is None and c.met is None and c.breached_at is None for c in rows.values())


def test_a_kind_without_a_time_starts_no_clock(widget, contact, at):
    make_policy(widget, resolution_seconds=None)
    chat = chat_of(say(widget, contact))
    assert [c.kind for c in clocks(chat)] == [FIRST]


def test_the_departments_policy_wins_over_the_default(widget, contact, at):
    department = DepartmentFactory(widget=widget)
    make_policy(widget)
    own = make_policy(widget, department=department, first_response_seconds=60)
    chat = ChatFactory(widget=widget, contact=contact, department=department)
    say(widget, contact)
    first = clocks(chat, FIRST)[0]
    assert first.policy_id == own.pk and first.due_at == T0 + timedelta(seconds=60)


def test_another_departments_policy_does_not_apply(widget, contact, at):
    make_policy(widget, department=DepartmentFactory(widget=widget))
    chat = ChatFactory(widget=widget, contact=contact, department=DepartmentFactory(widget=widget))
    say(widget, contact)
    assert clocks(chat) == []


def test_another_widgets_default_does_not_apply(widget, other_widget, contact, at):
    make_policy(other_widget)
    assert clocks(chat_of(say(widget, contact))) == []


# --- first response -------------------------------------------------------------------------------------


def test_a_public_answer_in_time_meets_first_response(widget, contact, operator, at, captured_events):
    make_policy(widget)
    chat = chat_of(say(widget, contact))
    at(120)
    answer(widget, chat, operator)
    first = clocks(chat, FIRST)[0]
    assert (first.stopped_at, first.met, first.breached_at) == (T0 + timedelta(seconds=120), True, None)
    assert first.agent_id == operator.pk
    assert clocks(chat, RESOLUTION)[0].stopped_at is None
    assert breaches(captured_events) == []


@pytest.mark.parametrize("visibility", [Message.Visibility.NOTE, Message.Visibility.INTERNAL])
def test_a_note_does_not_stop_the_clock(widget, contact, operator, at, visibility):
    make_policy(widget)
    chat = chat_of(say(widget, contact))
    answer(widget, chat, operator, visibility=visibility)
    assert clocks(chat, FIRST)[0].stopped_at is None


def test_the_ai_operators_answer_stops_the_clock(widget, contact, at):
    make_policy(widget)
    ai = AgentFactory(widget=widget, type=Agent.Type.AI)
    chat = chat_of(say(widget, contact))
    answer(widget, chat, ai)
    assert clocks(chat, FIRST)[0].met is True


def test_a_second_visitor_message_before_an_answer_starts_nothing(widget, contact, at):
    make_policy(widget)
    chat = chat_of(say(widget, contact))
    at(60)
    say(widget, contact, "Anyone?")
    assert sorted(c.kind for c in clocks(chat)) == [FIRST, RESOLUTION]


def test_an_answer_after_the_due_time_is_breached_once_and_never_met(widget, contact, operator, at, captured_events):
    policy = make_policy(widget)
    chat = chat_of(say(widget, contact))
    at(301)
    answer(widget, chat, operator)
    first = clocks(chat, FIRST)[0]
    assert first.met is False and first.breached_at == T0 + timedelta(seconds=301) and first.stopped_at
    assert breaches(captured_events) == [
        {"chat_id": chat.pk, "policy_id": policy.pk, "kind": FIRST, "button_guid": widget.button_guid}
    ]
    assert sla.breach_due(now=T0 + timedelta(seconds=400)) == 0  # nothing left for the timer
    assert len(breaches(captured_events)) == 1


def test_an_answer_exactly_at_the_due_time_is_met(widget, contact, operator, at):
    make_policy(widget)
    chat = chat_of(say(widget, contact))
    at(300)
    answer(widget, chat, operator)
    assert clocks(chat, FIRST)[0].met is True


def test_the_timer_breaches_and_the_later_answer_stops_it_still_breached(
    widget, contact, operator, at, captured_events
):
    make_policy(widget)
    chat = chat_of(say(widget, contact))
    assert sla.breach_due(now=T0 + timedelta(seconds=299)) == 0
    assert sla.breach_due(now=T0 + timedelta(seconds=300)) == 1
    first = clocks(chat, FIRST)[0]
    assert first.breached_at == T0 + timedelta(seconds=300) and first.met is False and first.stopped_at is None
    at(500)
    answer(widget, chat, operator)
    first.refresh_from_db()
    assert first.stopped_at == T0 + timedelta(seconds=500) and first.met is False
    assert [b["kind"] for b in breaches(captured_events)] == [FIRST]


def test_a_breach_names_the_routing_owner(widget, contact, operator, at):
    make_policy(widget)
    chat = chat_of(say(widget, contact))
    Chat.objects.filter(pk=chat.pk).update(agent=operator)
    sla.breach_due(now=T0 + timedelta(seconds=300))
    assert clocks(chat, FIRST)[0].agent_id == operator.pk


# --- next response --------------------------------------------------------------------------------------


def test_a_visitor_message_after_an_answer_starts_next_response(widget, contact, operator, at):
    make_policy(widget)
    chat = chat_of(say(widget, contact))
    answer(widget, chat, operator)
    at(1000)
    say(widget, contact, "One more question")
    nxt = clocks(chat, NEXT)
    assert len(nxt) == 1 and nxt[0].due_at == T0 + timedelta(seconds=1600)
    at(1100)
    say(widget, contact, "Still there?")  # a clock is running: no second one
    assert len(clocks(chat, NEXT)) == 1
    at(1200)
    answer(widget, chat, operator)
    assert clocks(chat, NEXT)[0].met is True
    at(1300)
    say(widget, contact, "And another")
    assert [c.stopped_at is None for c in clocks(chat, NEXT)] == [False, True]


def test_next_response_breaches_per_due_time(widget, contact, operator, at, captured_events):
    make_policy(widget)
    chat = chat_of(say(widget, contact))
    answer(widget, chat, operator)
    at(1000)
    say(widget, contact)
    at(1700)
    answer(widget, chat, operator)  # late: breached at the answer
    at(2000)
    say(widget, contact)
    sla.breach_due(now=T0 + timedelta(seconds=2600))
    sla.breach_due(now=T0 + timedelta(seconds=2700))
    assert [b["kind"] for b in breaches(captured_events)] == [NEXT, NEXT]
    assert [c.met for c in clocks(chat, NEXT)] == [False, False]


def test_without_a_next_response_time_no_next_clock(widget, contact, operator, at):
    make_policy(widget, next_response_seconds=None)
    chat = chat_of(say(widget, contact))
    answer(widget, chat, operator)
    say(widget, contact)
    assert clocks(chat, NEXT) == []


# --- resolution and the close ---------------------------------------------------------------------------


def test_closing_in_time_meets_resolution(widget, contact, operator, at, captured_events):
    make_policy(widget)
    chat = chat_of(say(widget, contact))
    answer(widget, chat, operator)
    at(3000)
    chat_services.close_chat(widget=widget, chat=chat)
    resolution = clocks(chat, RESOLUTION)[0]
    assert resolution.met is True and resolution.stopped_at == T0 + timedelta(seconds=3000)
    assert resolution.agent_id == operator.pk
    assert breaches(captured_events) == []


def test_closing_late_is_a_resolution_breach(widget, contact, operator, at, captured_events):
    make_policy(widget)
    chat = chat_of(say(widget, contact))
    answer(widget, chat, operator)
    at(3601)
    chat_services.close_chat(widget=widget, chat=chat)
    assert clocks(chat, RESOLUTION)[0].met is False
    assert [b["kind"] for b in breaches(captured_events)] == [RESOLUTION]


def test_closing_unanswered_before_the_due_time_decides_nothing(widget, contact, at, captured_events):
    make_policy(widget)
    chat = chat_of(say(widget, contact))
    at(100)
    chat_services.close_chat(widget=widget, chat=chat)
    first = clocks(chat, FIRST)[0]
    assert first.stopped_at is not None and first.met is None and first.breached_at is None
    assert sla.breach_due(now=T0 + timedelta(days=1)) == 0
    assert breaches(captured_events) == []


# --- business hours -------------------------------------------------------------------------------------


def office_hours(widget):
    week = {d: [["09:00", "17:00"]] for d in ("mon", "tue", "wed", "thu", "fri")}
    week.update(sat=[], sun=[])
    widget_services.set_business_hours(
        widget=widget,
        body={
            "enabled": True,
            "timezone": "Europe/Berlin",
            "weekly": week,
            "holidays": [],
            "outside_hours": "offline_form",
        },
    )


def test_business_hours_only_pauses_the_clock_over_the_weekend(widget, contact, time_machine):
    from datetime import datetime
    from zoneinfo import ZoneInfo

    berlin = ZoneInfo("Europe/Berlin")
    office_hours(widget)
    make_policy(widget, first_response_seconds=7200, business_hours_only=True)
    time_machine.move_to(datetime(2026, 12, 4, 16, 0, tzinfo=berlin), tick=False)  # Friday
    chat = chat_of(say(widget, contact))
    first = clocks(chat, FIRST)[0]
    assert first.due_at == datetime(2026, 12, 7, 10, 0, tzinfo=berlin)  # Monday
    assert clocks(chat, RESOLUTION)[0].due_at == datetime(2026, 12, 4, 17, 0, tzinfo=berlin)  # the hour left
    clocks(chat, RESOLUTION)[0].delete()
    assert sla.breach_due(now=datetime(2026, 12, 6, 23, 0, tzinfo=berlin)) == 0  # the weekend: no breach
    assert sla.breach_due(now=datetime(2026, 12, 7, 10, 0, tzinfo=berlin)) == 1


def test_business_hours_only_across_a_dst_change(widget, contact, time_machine):
    from datetime import datetime
    from zoneinfo import ZoneInfo

    berlin = ZoneInfo("Europe/Berlin")
    office_hours(widget)
    make_policy(widget, first_response_seconds=7200, business_hours_only=True)
    time_machine.move_to(datetime(2026, 10, 23, 16, 0, tzinfo=berlin), tick=False)  # Friday, CEST
    chat = chat_of(say(widget, contact))
    due = clocks(chat, FIRST)[0].due_at
    assert due == datetime(2026, 10, 26, 10, 0, tzinfo=berlin)  # Monday 10:00 CET = 09:00 UTC
    assert due.astimezone(berlin).utcoffset() == timedelta(hours=1)


def test_without_business_hours_only_the_weekend_counts(widget, contact, time_machine):
    from datetime import datetime
    from zoneinfo import ZoneInfo

    berlin = ZoneInfo("Europe/Berlin")
    office_hours(widget)
    make_policy(widget, first_response_seconds=7200)
    time_machine.move_to(datetime(2026, 12, 4, 16, 0, tzinfo=berlin), tick=False)
    chat = chat_of(say(widget, contact))
    assert clocks(chat, FIRST)[0].due_at == datetime(2026, 12, 4, 18, 0, tzinfo=berlin)


# --- policy changes -------------------------------------------------------------------------------------


def test_changing_the_policy_keeps_running_due_times(widget, contact, at):
    policy = make_policy(widget)
    chat = chat_of(say(widget, contact))
    sla.update_policy(widget=widget, policy=policy, changes={"first_response_seconds": 60})
    assert clocks(chat, FIRST)[0].due_at == T0 + timedelta(seconds=300)


# --- the routing read -----------------------------------------------------------------------------------


def test_the_routing_read_shows_due_times_and_breaches(api, widget, contact, operator, at):
    policy = make_policy(widget)
    chat = chat_of(say(widget, contact))
    url = f"/api/v1/chats/{chat.pk}/routing"
    sla_read = api(scopes=["chats:read"]).get(url).json()["data"]["sla"]
    assert sla_read == {
        "policy_id": policy.pk,
        "first_response_due_at": (T0 + timedelta(seconds=300)).isoformat(),
        "next_response_due_at": None,
        "resolution_due_at": (T0 + timedelta(seconds=3600)).isoformat(),
        "breaches": [],
    }
    sla.breach_due(now=T0 + timedelta(seconds=400))
    at(500)
    answer(widget, chat, operator)
    sla_read = api(scopes=["chats:read"]).get(url).json()["data"]["sla"]
    assert sla_read["first_response_due_at"] is None
    assert sla_read["breaches"] == [
        {
            "kind": FIRST,
            "due_at": (T0 + timedelta(seconds=300)).isoformat(),
            "at": (T0 + timedelta(seconds=400)).isoformat(),
        }
    ]


def test_the_routing_read_without_clocks_has_no_sla(api, widget, contact, at):
    chat = chat_of(say(widget, contact))
    assert api(scopes=["chats:read"]).get(f"/api/v1/chats/{chat.pk}/routing").json()["data"]["sla"] is None


def test_clock_rows_are_unique_per_kind_and_due_time(widget, contact, at):
    policy = make_policy(widget)
    chat = chat_of(say(widget, contact))
    again = sla.start_clock(widget=widget, chat=chat, policy=policy, kind=FIRST, now=T0)
    assert again is None and SlaClock.objects.filter(chat=chat, kind=FIRST).count() == 1
