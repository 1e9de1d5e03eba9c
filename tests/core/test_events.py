"""The transactional outbox: emit writes a row in the caller's transaction, fan-out runs after
commit, and the re-drive job hands off rows that never fanned out."""

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from apps.core import events
from apps.core.models import OutboxEvent
from apps.core.tasks import redrive_outbox

pytestmark = pytest.mark.django_db

CALLS = []


def recording_handler(batch):
    CALLS.extend((event.pk, event.type) for event in batch)


@pytest.fixture
def recorder(settings):
    CALLS.clear()
    settings.EVENT_HANDLERS = ["tests.core.test_events.recording_handler"]
    return CALLS


def test_emit_writes_the_row_with_button_guid(widget, captured_events):
    events.emit(widget, events.CHAT_CLOSED, chat_id=7, reason="expired")
    assert captured_events() == [
        ("chat.closed", {"chat_id": 7, "reason": "expired", "button_guid": widget.button_guid})
    ]


def test_emit_refuses_unknown_types_and_wrong_fields(widget):
    with pytest.raises(ValueError):
        events.emit(widget, "chat.updated", chat_id=1)
    with pytest.raises(ValueError):
        events.emit(widget, events.CHAT_CLOSED, chat_id=1)


def test_rolled_back_transaction_leaves_no_event(widget):
    with pytest.raises(RuntimeError), transaction.atomic():
        events.emit(widget, events.AGENT_ONLINE, operator_id=1)
        raise RuntimeError
    assert not OutboxEvent.objects.exists()


def test_fan_out_runs_after_commit_and_marks_dispatched(widget, recorder, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        event = events.emit(widget, events.AGENT_OFFLINE, operator_id=3)
        assert recorder == []
    assert recorder == [(event.pk, "agent.offline")]
    event.refresh_from_db()
    assert event.dispatched_at is not None and event.attempts == 1


def test_fan_out_twice_runs_handlers_once(widget, recorder):
    event = events.emit(widget, events.AGENT_OFFLINE, operator_id=3)
    assert events.fan_out(event.pk) is True
    assert events.fan_out(event.pk) is False
    assert len(recorder) == 1


def test_failing_handler_leaves_the_event_for_redrive(widget, settings):
    settings.EVENT_HANDLERS = ["tests.core.test_events.exploding_handler"]
    event = events.emit(widget, events.AGENT_OFFLINE, operator_id=3)
    with pytest.raises(RuntimeError):
        events.fan_out(event.pk)
    event.refresh_from_db()
    assert event.dispatched_at is None


def exploding_handler(batch):
    raise RuntimeError("receiver down")


POISON = set()


def poisoned_handler(batch):
    """Fails on any batch holding a poisoned event; records the others."""
    if POISON & {event.pk for event in batch}:
        raise RuntimeError("cannot render this event")
    CALLS.extend((event.pk, event.type) for event in batch)


def test_redrive_hands_off_stale_undispatched_rows_only(widget, recorder, monkeypatch):
    from apps.core import tasks

    stale = events.emit(widget, events.AGENT_ONLINE, operator_id=1)
    events.emit(widget, events.AGENT_ONLINE, operator_id=2)  # fresh: its own hand-off is on its way
    OutboxEvent.objects.filter(pk=stale.pk).update(created_at=timezone.now() - timedelta(minutes=5))
    handed = []
    monkeypatch.setattr(tasks.fan_out_batch, "apply_async", lambda args, **options: handed.append(args[0]))
    assert redrive_outbox() == 1
    assert handed == [[str(stale.pk)]]


def behind(burst):
    """The workers are behind: the events waited longer than STEAL_AFTER for their hand-offs."""
    OutboxEvent.objects.filter(pk__in=[event.pk for event in burst]).update(
        created_at=timezone.now() - events.STEAL_AFTER * 2
    )
    for event in burst:
        event.refresh_from_db()


def test_one_task_fans_out_the_waiting_events_in_one_batch(widget, recorder, django_assert_max_num_queries):
    # given 30 committed events whose hand-offs have waited (the workers are behind)
    burst = [events.emit(widget, events.AGENT_ONLINE, operator_id=n) for n in range(30)]
    behind(burst)
    # when the first task runs, in a bounded number of statements
    with django_assert_max_num_queries(8):
        assert events.fan_out(burst[0].pk) is True
    # then every waiting event went through the handlers once and is dispatched; the other tasks
    # find their events done
    assert sorted(pk for pk, _ in recorder) == sorted(event.pk for event in burst)
    assert not OutboxEvent.objects.filter(dispatched_at__isnull=True).exists()
    assert [events.fan_out(event.pk) for event in burst[1:]] == [False] * 29
    assert len(recorder) == 30


def test_a_prompt_hand_off_fans_out_its_own_events_only(widget, recorder, django_assert_max_num_queries):
    # given waiting events and a fresh one whose hand-off runs at once (the workers keep up)
    waiting = [events.emit(widget, events.AGENT_ONLINE, operator_id=n) for n in range(3)]
    fresh = events.emit(widget, events.AGENT_ONLINE, operator_id=9)
    # when its task runs: lock-and-read, handlers, mark dispatched (no steal, no savepoint of its
    # own: the two more statements are the test transaction's savepoint around the task's atomic)
    with django_assert_max_num_queries(4):
        assert events.fan_out(fresh.pk) is True
    # then only its own event went through
    assert recorder == [(fresh.pk, "agent.online")]
    assert OutboxEvent.objects.filter(dispatched_at__isnull=True).count() == len(waiting)


def test_batch_size_bounds_what_one_task_takes(widget, recorder):
    burst = [events.emit(widget, events.AGENT_ONLINE, operator_id=n) for n in range(10)]
    behind(burst)
    assert events.fan_out(burst[5].pk, batch_size=4) is True
    assert len(recorder) == 4
    assert burst[5].pk in {pk for pk, _ in recorder}
    assert OutboxEvent.objects.filter(dispatched_at__isnull=True).count() == 6


def test_an_event_that_cannot_fan_out_holds_back_no_other(widget, settings):
    # given a burst where one event makes the handler fail
    CALLS.clear()
    settings.EVENT_HANDLERS = ["tests.core.test_events.poisoned_handler"]
    burst = [events.emit(widget, events.AGENT_ONLINE, operator_id=n) for n in range(5)]
    behind(burst)
    POISON.clear()
    POISON.add(burst[2].pk)
    # when the task of the poisoned event runs, it fails alone and dispatches nothing
    with pytest.raises(RuntimeError):
        events.fan_out(burst[2].pk)
    assert not OutboxEvent.objects.filter(dispatched_at__isnull=False).exists()
    # and the task of a healthy event, whose batch holds the poisoned one, still dispatches its own
    assert events.fan_out(burst[0].pk) is True
    # then
    assert CALLS == [(burst[0].pk, "agent.online")]
    assert set(OutboxEvent.objects.filter(dispatched_at__isnull=True).values_list("pk", flat=True)) == {
        event.pk for event in burst[1:]
    }


def test_lost_hand_off_is_recovered_by_redrive(widget, recorder, monkeypatch):
    from apps.core import tasks

    def broker_down(*args, **kwargs):
        raise ConnectionError("broker down")

    monkeypatch.setattr(tasks.fan_out_batch, "apply_async", broker_down)
    event = events.emit(widget, events.AGENT_ONLINE, operator_id=1)
    events._hand_off([str(event.pk)])  # logs and swallows: the change that emitted it stays committed
    monkeypatch.undo()
    OutboxEvent.objects.filter(pk=event.pk).update(created_at=timezone.now() - timedelta(minutes=2))
    redrive_outbox()
    assert recorder == [(event.pk, "agent.online")]


def test_catalogue_has_the_spec_native_names_wave_3_and_4_ones_and_five_legacy_names():
    assert len(events.CATALOGUE) == 15 and events.CONTACT_ERASED in events.CATALOGUE
    assert {events.CHAT_ASSIGNED, events.SLA_BREACHED, events.CONTACT_MERGED, events.CHAT_LABELS_CHANGED} <= set(
        events.CATALOGUE
    )
    assert set(events.LEGACY_NAMES.values()) <= set(events.CATALOGUE)
    assert len(events.LEGACY_NAMES) == 5


# --- one hand-off per transaction ----------------------------------------------------------------------


@pytest.fixture
def handed(monkeypatch):
    """The hand-offs as the broker would get them: one list of event ids per fan-out task."""
    from apps.core import tasks

    sent: list[list[str]] = []
    monkeypatch.setattr(tasks.fan_out_batch, "apply_async", lambda args, **options: sent.append(args[0]))
    return sent


def test_a_transaction_hands_its_events_off_in_one_task(widget, handed, django_capture_on_commit_callbacks):
    # given three events committed in one transaction
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        emitted = [events.emit(widget, events.AGENT_ONLINE, operator_id=n) for n in range(3)]
        # then nothing is handed off before the commit
        assert handed == []
    # and one task carries all three, in emit order
    assert handed == [[str(event.pk) for event in emitted]]


def test_separate_transactions_hand_off_separately(widget, handed, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            first = events.emit(widget, events.AGENT_ONLINE, operator_id=1)
        with transaction.atomic():
            second = events.emit(widget, events.AGENT_ONLINE, operator_id=2)
    assert handed == [[str(first.pk)], [str(second.pk)]]


def test_a_large_transaction_is_handed_off_in_batches_of_fan_out_batch(
    widget, handed, django_capture_on_commit_callbacks, monkeypatch
):
    monkeypatch.setattr(events, "FAN_OUT_BATCH", 4)
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        emitted = [str(events.emit(widget, events.AGENT_ONLINE, operator_id=n).pk) for n in range(10)]
    assert handed == [emitted[0:4], emitted[4:8], emitted[8:10]]


def test_the_hand_off_shows_the_first_id_and_the_count_in_the_worker_log(monkeypatch):
    from apps.core import tasks

    sent = []
    monkeypatch.setattr(tasks.fan_out_batch, "apply_async", lambda args, **options: sent.append((args, options)))
    events.send_fan_out_batch(["a", "b", "c"])
    events.send_fan_out_batch(["z"])
    assert sent == [
        ((["a", "b", "c"],), {"argsrepr": "(['a', ... 3 ids],)"}),
        ((["z"],), {"argsrepr": "(['z'],)"}),
    ]


def test_an_event_of_a_rolled_back_savepoint_does_not_take_the_others_with_it(
    widget, handed, django_capture_on_commit_callbacks
):
    # given an event in a savepoint that rolls back, then events of the outer transaction
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        with pytest.raises(RuntimeError), transaction.atomic():
            events.emit(widget, events.AGENT_ONLINE, operator_id=1)
            raise RuntimeError
        kept = [events.emit(widget, events.AGENT_ONLINE, operator_id=n) for n in (2, 3)]
    # then the surviving events are handed off, the rolled back one is not
    assert handed == [[str(event.pk) for event in kept]]


def test_an_event_in_a_rolled_back_savepoint_after_the_first_is_not_lost_with_it(
    widget, handed, django_capture_on_commit_callbacks
):
    # given an outer event first, then one in a savepoint that is released and one that rolls back
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        outer = events.emit(widget, events.AGENT_ONLINE, operator_id=1)
        with transaction.atomic():
            inner = events.emit(widget, events.AGENT_ONLINE, operator_id=2)
        with pytest.raises(RuntimeError), transaction.atomic():
            events.emit(widget, events.AGENT_ONLINE, operator_id=3)
            raise RuntimeError
        last = events.emit(widget, events.AGENT_ONLINE, operator_id=4)
    # then every committed event is handed off exactly once, the rolled back one never
    ids = [pk for batch in handed for pk in batch]
    assert sorted(ids) == sorted(str(event.pk) for event in (outer, inner, last))
    assert set(OutboxEvent.objects.values_list("pk", flat=True)) == {outer.pk, inner.pk, last.pk}


def test_an_event_emitted_outside_a_transaction_is_handed_off_at_once(widget, handed, transactional_db):
    event = events.emit(widget, events.AGENT_ONLINE, operator_id=1)
    assert handed == [[str(event.pk)]]


def test_a_batch_task_fans_out_its_events_in_a_bounded_number_of_statements(
    widget, recorder, django_assert_max_num_queries
):
    burst = [events.emit(widget, events.AGENT_ONLINE, operator_id=n) for n in range(40)]
    with django_assert_max_num_queries(8):
        assert events.fan_out_many([event.pk for event in burst[:30]], batch_size=30) == 30
    assert sorted(pk for pk, _ in recorder) == sorted(event.pk for event in burst[:30])
    assert OutboxEvent.objects.filter(dispatched_at__isnull=True).count() == 10
    assert events.fan_out_many([event.pk for event in burst[:30]]) == 0


def test_a_poisoned_event_in_a_batch_holds_back_none_of_its_batch(widget, settings):
    # given one transaction's batch where one event makes the handler fail
    CALLS.clear()
    settings.EVENT_HANDLERS = ["tests.core.test_events.poisoned_handler"]
    burst = [events.emit(widget, events.AGENT_ONLINE, operator_id=n) for n in range(4)]
    POISON.clear()
    POISON.add(burst[1].pk)
    # when the batch task runs
    done = events.fan_out_many([event.pk for event in burst])
    # then the three healthy events are dispatched and the poisoned one waits for the re-drive
    assert done == 3
    assert set(OutboxEvent.objects.filter(dispatched_at__isnull=True).values_list("pk", flat=True)) == {burst[1].pk}
    assert sorted(pk for pk, _ in CALLS) == sorted(event.pk for event in burst if event.pk != burst[1].pk)


def test_redrive_hands_off_in_batches(widget, handed, monkeypatch):
    from apps.core import tasks

    monkeypatch.setattr(events, "FAN_OUT_BATCH", 2)
    stale = [events.emit(widget, events.AGENT_ONLINE, operator_id=n) for n in range(3)]
    OutboxEvent.objects.update(created_at=timezone.now() - timedelta(minutes=5))
    assert tasks.redrive_outbox() == 3
    assert [len(batch) for batch in handed] == [2, 1]
    assert sorted(pk for batch in handed for pk in batch) == sorted(str(event.pk) for event in stale)
