"""The visitor's place in the queue: the computation (selectors.queue_position, positions.places) and
what a change of the queue tells the visitors (positions.announce, the routing.queue_positions event
and the `queue` frames apps.chats pushes)."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.chats import realtime
from apps.chats.models import Chat, Contact
from apps.chats.tests.factories import ChatFactory
from apps.core import events, ports
from apps.routing import positions, selectors, services
from apps.routing.models import ChatRouting, RoutingSettings

pytestmark = pytest.mark.django_db

T0 = timezone.now() - timedelta(hours=1)


def queued(widget, *, at=None, chat=None) -> Chat:
    chat = chat or ChatFactory(contact__widget=widget)
    at = at or T0
    ChatRouting.objects.create(chat=chat, widget=widget, queued_at=at, queue_since=at, updated_at=at)
    return chat


def waited(widget, seconds: list[float]) -> None:
    """Assigned chats that waited `seconds` (the estimate's sample), the last one the latest."""
    for n, wait in enumerate(seconds):
        chat = ChatFactory(contact__widget=widget)
        ChatRouting.objects.create(
            chat=chat,
            widget=widget,
            queued_at=T0,
            assigned_at=T0 + timedelta(seconds=n),
            wait_seconds=wait,
            assigned_by="routing",
        )


def show(widget, on: bool) -> None:
    RoutingSettings.objects.update_or_create(widget=widget, defaults={"show_queue_position": on})


@pytest.fixture
def frames(monkeypatch):
    """The frames apps.chats pushes: [(groups, frame), ...]."""
    sent: list[tuple[list[str], dict]] = []
    monkeypatch.setattr(realtime, "push_each", lambda pushes: sent.extend((list(g), f) for g, f in pushes))
    return sent


# --- the computation ---------------------------------------------------------------------------------


def test_positions_count_from_one_in_queue_order(widget, other_widget):
    first = queued(widget, at=T0)
    tied = [queued(widget, at=T0 + timedelta(seconds=5)) for _ in range(2)]  # same time: lower id first
    queued(other_widget, at=T0 - timedelta(minutes=5))  # another widget's queue is not this one's
    assert selectors.queue_position(first) == (1, None)
    assert selectors.queue_position(tied[0]) == (2, None)
    assert selectors.queue_position(tied[1]) == (3, None)
    assert positions.places(widget) == {first.pk: (1, None), tied[0].pk: (2, None), tied[1].pk: (3, None)}


def test_a_chat_that_does_not_wait_has_no_position(widget):
    never = ChatFactory(contact__widget=widget)
    assigned = queued(widget)
    ChatRouting.objects.filter(chat=assigned).update(queue_since=None, assigned_at=T0)
    assert selectors.queue_position(never) == (None, None)
    assert selectors.queue_position(assigned) == (None, None)


def test_the_wait_needs_five_assigned_chats(widget):
    chats = [queued(widget, at=T0 + timedelta(seconds=n)) for n in range(3)]
    waited(widget, [60, 60, 60, 60])
    assert selectors.queue_position(chats[2]) == (3, None)
    waited(widget, [60])
    assert selectors.queue_position(chats[2]) == (3, 180)


def test_the_wait_is_the_position_times_the_median_of_the_last_50(widget):
    chats = [queued(widget, at=T0 + timedelta(seconds=n)) for n in range(3)]
    waited(widget, [1000.0] * 20 + [30.0] * 25 + [90.0] * 25)  # the 20 oldest fall out of the 50
    assert selectors.estimated_wait_per_place(widget) == 60.0
    assert [selectors.queue_position(c) for c in chats] == [(1, 60), (2, 120), (3, 180)]
    assert positions.places(widget)[chats[2].pk] == (3, 180)


def test_the_port_answers_nothing_while_the_setting_is_off(widget):
    chat = queued(widget)
    port = ports.lookup(ports.VISITOR_QUEUE)
    assert port.position(chat) == (1, None) and port.shows(widget) is True  # the default setting
    show(widget, False)
    assert port.position(chat) == (None, None) and port.shows(widget) is False


# --- what a change tells ------------------------------------------------------------------------------


def test_a_change_tells_exactly_the_visitors_whose_place_changed(widget, frames, django_capture_on_commit_callbacks):
    chats = [queued(widget, at=T0 + timedelta(seconds=n)) for n in range(4)]
    positions.announce(widget)  # everyone told once
    frames.clear()

    with django_capture_on_commit_callbacks(execute=True):
        services.leave_queue(chat=chats[1], reason="closed")

    by_chat = {f["chat_id"]: (groups, f) for groups, f in frames}
    assert set(by_chat) == {chats[1].pk, chats[2].pk, chats[3].pk}  # the head's place did not change
    assert by_chat[chats[2].pk][1]["position"] == 2 and by_chat[chats[3].pk][1]["position"] == 3
    assert by_chat[chats[1].pk][1] == {
        "event": "queue",
        "type": "queue",
        "chat_id": chats[1].pk,
        "position": None,
        "estimated_wait_seconds": None,
    }
    assert by_chat[chats[2].pk][0] == [f"chat.{chats[2].pk}"]  # only the visitor's own room


def test_a_chat_joining_at_the_tail_tells_only_itself(widget, frames, django_capture_on_commit_callbacks):
    chats = [queued(widget, at=T0 + timedelta(seconds=n)) for n in range(3)]
    positions.announce(widget)
    frames.clear()
    show(widget, True)
    RoutingSettings.objects.filter(widget=widget).update(mode="round_robin")
    newcomer = ChatFactory(contact__widget=widget)

    with django_capture_on_commit_callbacks(execute=True):
        services.enqueue(chat=newcomer)

    assert [f for _, f in frames] == [realtime.queue_frame(newcomer.pk, 4, None)]
    assert chats  # the three ahead heard nothing


def test_a_new_estimate_tells_everyone_whose_wait_changed(widget, frames, django_capture_on_commit_callbacks):
    chats = [queued(widget, at=T0 + timedelta(seconds=n)) for n in range(3)]
    waited(widget, [10] * 5)
    positions.announce(widget)
    waited(widget, [40] * 10)  # the median moves from 10 to 40
    with django_capture_on_commit_callbacks(execute=True):
        positions.announce(widget)
    assert [f["estimated_wait_seconds"] for _, f in frames] == [40, 80, 120]
    assert [f["chat_id"] for _, f in frames] == [c.pk for c in chats]


def test_nothing_new_tells_nobody(widget, frames):
    queued(widget)
    assert positions.announce(widget)
    assert positions.announce(widget) == []


def test_with_the_setting_off_only_the_leaving_chat_hears(widget, frames, django_capture_on_commit_callbacks):
    show(widget, False)
    chats = [queued(widget, at=T0 + timedelta(seconds=n)) for n in range(3)]
    with django_capture_on_commit_callbacks(execute=True):
        services.leave_queue(chat=chats[0], reason="closed")
    assert [f for _, f in frames] == [realtime.queue_frame(chats[0].pk, None, None)]


def test_turning_the_setting_off_and_on_clears_and_shows_every_line(widget, frames, django_capture_on_commit_callbacks):
    chats = [queued(widget, at=T0 + timedelta(seconds=n)) for n in range(2)]
    positions.announce(widget)
    data = {"mode": "round_robin", "default_capacity": 3, "reroute_after_seconds": None}
    with django_capture_on_commit_callbacks(execute=True):
        services.put_settings(widget=widget, data={**data, "show_queue_position": False})
    assert [(f["chat_id"], f["position"]) for _, f in frames] == [(chats[0].pk, None), (chats[1].pk, None)]
    frames.clear()
    with django_capture_on_commit_callbacks(execute=True):
        services.put_settings(widget=widget, data={**data, "show_queue_position": True})
    assert [(f["chat_id"], f["position"]) for _, f in frames] == [(chats[0].pk, 1), (chats[1].pk, 2)]


def test_the_positions_event_is_internal(widget, captured_events, frames):
    queued(widget)
    positions.announce(widget)
    assert events.QUEUE_POSITIONS in events.INTERNAL
    assert captured_events() == []  # no outbox row, no webhook


# --- cost ------------------------------------------------------------------------------------------------


def test_one_change_with_1000_queued_costs_a_bounded_number_of_statements(
    widget, frames, django_capture_on_commit_callbacks, django_assert_max_num_queries
):
    contacts = Contact.objects.bulk_create([Contact(widget=widget, name=f"v{n}") for n in range(1000)])
    chats = Chat.objects.bulk_create([Chat(widget=widget, contact=c, channel="widget") for c in contacts])
    ChatRouting.objects.bulk_create(
        [
            ChatRouting(chat=c, widget=widget, queued_at=T0, queue_since=T0 + timedelta(seconds=n), updated_at=T0)
            for n, c in enumerate(chats)
        ]
    )
    waited(widget, [30] * 5)
    with django_capture_on_commit_callbacks(execute=True):
        positions.announce(widget)
    assert len(frames) == 1000
    frames.clear()

    with django_assert_max_num_queries(6), django_capture_on_commit_callbacks(execute=True):
        services.leave_queue(chat=chats[0], reason="closed")

    assert len(frames) == 1000  # 999 moved up by one, the leaving chat hears null
    moved = {f["chat_id"]: (f["position"], f["estimated_wait_seconds"]) for _, f in frames}
    assert moved[chats[0].pk] == (None, None)
    assert moved[chats[1].pk] == (1, 30) and moved[chats[999].pk] == (999, 29970)

    with CaptureQueriesContext(connection) as second:
        with django_capture_on_commit_callbacks(execute=True):
            services.leave_queue(chat=chats[500], reason="closed")
    assert len(second.captured_queries) <= 6  # the change itself, then three reads
    assert len(frames) == 1000 + 500  # 499 behind it moved, plus its own null
