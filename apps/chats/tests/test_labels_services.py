"""The labels' services: names in NFC without regard to case, the per-chat limit, one event per change."""

import unicodedata

import pytest

from apps.audit.models import AuditEntry
from apps.chats import services
from apps.chats.errors import LabelTaken, TooManyLabels, UnknownLabel
from apps.chats.models import ChatLabel, Label
from apps.chats.tests.factories import ChatFactory
from apps.core.errors import ValidationFailed

pytestmark = pytest.mark.django_db

LABELS_CHANGED = "chat.labels_changed"


def changes(captured_events):
    return [data for kind, data in captured_events() if kind == LABELS_CHANGED]


@pytest.fixture
def chat(widget):
    return ChatFactory(widget=widget, contact__widget=widget)


@pytest.fixture
def labels(widget):
    return {name: services.create_label(widget=widget, name=name) for name in ("Refund", "vip", "Éclair", "b2b")}


def test_set_replaces_the_labels_and_returns_them_sorted_without_regard_to_case(widget, chat, labels):
    services.add_chat_labels(widget=widget, chat=chat, names=["b2b"], by="api")

    result = services.set_chat_labels(widget=widget, chat=chat, names=["vip", "refund"], by="api")

    assert result == ["Refund", "vip"]
    assert sorted(ChatLabel.objects.filter(chat=chat).values_list("label__name", flat=True)) == ["Refund", "vip"]


def test_names_match_in_nfc_and_without_regard_to_case(widget, chat, labels):
    decomposed = unicodedata.normalize("NFD", "ÉCLAIR")

    result = services.set_chat_labels(widget=widget, chat=chat, names=[decomposed, "REFUND", "refund"], by="agent")

    assert result == ["Refund", "Éclair"]


def test_a_change_emits_chat_labels_changed_once_with_the_names_after_it(widget, chat, labels, captured_events):
    services.set_chat_labels(widget=widget, chat=chat, names=["vip", "Refund", "b2b"], by="api")

    assert changes(captured_events) == [
        {"chat_id": chat.pk, "labels": ["b2b", "Refund", "vip"], "button_guid": widget.button_guid}
    ]


def test_no_change_emits_nothing(widget, chat, labels, captured_events):
    services.set_chat_labels(widget=widget, chat=chat, names=["vip"], by="api")
    before = len(changes(captured_events))

    services.set_chat_labels(widget=widget, chat=chat, names=["VIP"], by="api")
    services.add_chat_labels(widget=widget, chat=chat, names=["vip"], by="macro")
    services.remove_chat_labels(widget=widget, chat=chat, names=["refund"], by="automation")

    assert len(changes(captured_events)) == before == 1


def test_add_keeps_the_others_and_remove_takes_only_the_named(widget, chat, labels, captured_events):
    services.add_chat_labels(widget=widget, chat=chat, names=["vip"], by="macro")
    assert services.add_chat_labels(widget=widget, chat=chat, names=["b2b"], by="macro") == ["b2b", "vip"]

    assert services.remove_chat_labels(widget=widget, chat=chat, names=["VIP"], by="automation") == ["b2b"]

    assert [data["labels"] for data in changes(captured_events)] == [["vip"], ["b2b", "vip"], ["b2b"]]


def test_an_unknown_name_is_a_422_naming_its_entry_and_changes_nothing(widget, chat, labels, captured_events):
    services.set_chat_labels(widget=widget, chat=chat, names=["vip"], by="api")

    with pytest.raises(UnknownLabel) as raised:
        services.set_chat_labels(widget=widget, chat=chat, names=["refund", "nope"], by="api")

    assert raised.value.status == 422
    assert list(raised.value.errors) == ["labels.1"]
    assert "nope" in raised.value.detail
    assert list(ChatLabel.objects.filter(chat=chat).values_list("label__name", flat=True)) == ["vip"]
    assert len(changes(captured_events)) == 1


def test_another_widgets_label_is_unknown(widget, other_widget, chat):
    services.create_label(widget=other_widget, name="theirs")

    with pytest.raises(UnknownLabel):
        services.add_chat_labels(widget=widget, chat=chat, names=["theirs"], by="api")


def test_a_chat_carries_at_most_20_labels(widget, chat, captured_events):
    names = [f"label {n}" for n in range(21)]
    for name in names:
        services.create_label(widget=widget, name=name)
    services.set_chat_labels(widget=widget, chat=chat, names=names[:20], by="api")

    with pytest.raises(TooManyLabels) as raised:
        services.add_chat_labels(widget=widget, chat=chat, names=names[20:], by="api")

    assert raised.value.status == 422
    assert list(raised.value.errors) == ["labels"]
    assert ChatLabel.objects.filter(chat=chat).count() == 20
    assert len(changes(captured_events)) == 1


def test_a_blank_or_non_text_name_is_a_422(widget, chat, labels):
    with pytest.raises(ValidationFailed) as raised:
        services.set_chat_labels(widget=widget, chat=chat, names=["vip", " ", 7], by="api")

    assert sorted(raised.value.errors) == ["labels.1", "labels.2"]


def test_label_names_are_unique_per_widget_without_regard_to_case(widget, other_widget):
    services.create_label(widget=widget, name="Refund")

    with pytest.raises(LabelTaken) as raised:
        services.create_label(widget=widget, name=" REFUND ")

    assert raised.value.status == 409 and raised.value.code == "label_taken"
    assert services.create_label(widget=other_widget, name="refund").name == "refund"


def test_a_name_is_stored_in_nfc_and_trimmed(widget):
    label = services.create_label(widget=widget, name=unicodedata.normalize("NFD", "  Éclair "))

    assert label.name == "Éclair" and unicodedata.is_normalized("NFC", label.name)


def test_renaming_onto_another_label_is_label_taken_and_changes_nothing(widget, labels):
    with pytest.raises(LabelTaken):
        services.update_label(widget=widget, label=labels["vip"], changes={"name": "b2B"})

    assert Label.objects.get(pk=labels["vip"].pk).name == "vip"


def test_renaming_and_recolouring_emit_no_chat_event_and_are_audited(widget, chat, labels, captured_events):
    services.add_chat_labels(widget=widget, chat=chat, names=["vip"], by="api")

    label = services.update_label(widget=widget, label=labels["vip"], changes={"name": "VIP", "color": "#aa0000"})

    assert (label.name, label.color) == ("VIP", "#aa0000")
    assert len(changes(captured_events)) == 1
    entry = AuditEntry.objects.get(action="label.changed", target_id=str(label.pk))
    assert entry.changes == {"name": {"from": "vip", "to": "VIP"}, "color": {"from": "", "to": "#aa0000"}}


def test_deleting_a_label_takes_it_off_every_chat_with_one_event_per_chat(widget, labels, captured_events):
    first, second, untouched = (ChatFactory(widget=widget, contact__widget=widget) for _ in range(3))
    services.set_chat_labels(widget=widget, chat=first, names=["vip", "b2b"], by="api")
    services.set_chat_labels(widget=widget, chat=second, names=["vip"], by="api")
    services.set_chat_labels(widget=widget, chat=untouched, names=["b2b"], by="api")
    before = len(changes(captured_events))

    services.delete_label(widget=widget, label=labels["vip"])

    assert changes(captured_events)[before:] == [
        {"chat_id": first.pk, "labels": ["b2b"], "button_guid": widget.button_guid},
        {"chat_id": second.pk, "labels": [], "button_guid": widget.button_guid},
    ]
    assert not Label.objects.filter(pk=labels["vip"].pk).exists()
    assert ChatLabel.objects.filter(chat=untouched).count() == 1
    assert AuditEntry.objects.filter(action="label.deleted", target_id=str(labels["vip"].pk)).count() == 1


def test_creating_a_label_is_audited(widget):
    label = services.create_label(widget=widget, name="vip", color="#00aa00")

    entry = AuditEntry.objects.get(action="label.created", target_id=str(label.pk))
    assert entry.changes == {"name": {"from": None, "to": "vip"}, "color": {"from": None, "to": "#00aa00"}}
