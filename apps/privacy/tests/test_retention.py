"""GET/PUT /v1/widget/retention and the nightly job that erases expired chats."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from apps.ai.models import DemandSignal
from apps.ai.tests.factories import DemandSignalFactory
from apps.audit.models import AuditEntry
from apps.chats.models import Chat, Message
from apps.chats.tests.factories import ChatFactory, MessageFactory
from apps.privacy import services
from apps.privacy.models import RetentionPolicy
from apps.stats.models import DailyWidgetFacts
from tests.support.plugin import assert_problem

from .data import make_person

pytestmark = pytest.mark.django_db
URL = "/api/v1/widget/retention"


def idem():
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"key-{uuid.uuid4().hex}"}


def put(client, body, **headers):
    return client.put(URL, body, format="json", **{**idem(), **headers})


def aged_chat(widget, *, days: int, messages: int = 2) -> Chat:
    chat = ChatFactory(contact__widget=widget)
    at = timezone.now() - timedelta(days=days)
    for n in range(messages):
        MessageFactory(chat=chat, created_at=at + timedelta(seconds=n))
    return chat


# --- the setting -----------------------------------------------------------------------------------


def test_retention_is_null_until_set_and_put_sets_it(api, widget):
    client = api()
    assert client.get(URL).json() == {"chats_days": None}
    response = put(client, {"chats_days": 90})
    assert response.status_code == 200 and response.json() == {"chats_days": 90}
    assert client.get(URL).json() == {"chats_days": 90}
    assert put(client, {"chats_days": None}).json() == {"chats_days": None}


@pytest.mark.parametrize(
    "body", [{"chats_days": 29}, {"chats_days": 3651}, {"chats_days": "90"}, {"chats_days": True}, {}, {"days": 90}]
)
def test_retention_refuses_bad_input_with_422_and_changes_nothing(api, widget, body):
    assert_problem(put(api(), body), 422)
    assert not RetentionPolicy.objects.filter(widget=widget, chats_days__isnull=False).exists()


def test_retention_rules(api, widget):
    assert_problem(APIClient().get(URL), 401)
    assert_problem(api(scopes=["chats:read"]).get(URL), 403, "missing_scope")
    assert_problem(put(api(scopes=["widget:read", "widget:write"]), {"chats_days": 30}), 403, "missing_scope")
    assert_problem(api().put(URL, {"chats_days": 30}, format="json"), 400)
    assert api(scopes=["widget:read"]).get(URL).status_code == 200


def test_retention_is_per_widget(api, widget, other_widget):
    put(api(), {"chats_days": 30})
    assert api(w=other_widget).get(URL).json() == {"chats_days": None}


def test_a_retention_change_is_audited_with_the_token_and_the_change(api, widget):
    put(api(name="policy bot"), {"chats_days": 365})
    put(api(name="policy bot"), {"chats_days": 365})  # no change, no row
    row = AuditEntry.objects.get(widget=widget, action="retention.changed")
    assert (row.actor_type, row.actor_name) == ("token", "policy bot")
    assert row.changes == {"chats_days": {"from": None, "to": 365}}


# --- the nightly job ---------------------------------------------------------------------------------


def test_the_job_erases_chats_past_the_window_and_keeps_the_others(widget, other_widget):
    services.set_retention(widget=widget, chats_days=30)
    old = [aged_chat(widget, days=40), aged_chat(widget, days=31)]
    recent = aged_chat(widget, days=29)
    no_policy = aged_chat(other_widget, days=400)
    facts = list(DailyWidgetFacts.objects.values())

    counts = services.erase_expired_chats()

    assert counts == {"chats": 2, "messages": 4}
    assert not Chat.objects.filter(pk__in=[c.pk for c in old]).exists()
    assert not Message.objects.filter(chat_id__in=[c.pk for c in old]).exists()
    assert Chat.objects.filter(pk__in=[recent.pk, no_policy.pk]).count() == 2
    assert Message.objects.filter(chat=recent).count() == 2
    assert old[0].contact.__class__.objects.filter(pk=old[0].contact_id).exists()  # contacts stay
    assert list(DailyWidgetFacts.objects.values()) == facts


def test_the_job_uses_the_erasure_rules_for_files_and_the_webhook_log(widget, django_capture_on_commit_callbacks):
    from apps.core.models import File

    person = make_person(widget, tag="ned")
    storage = File._meta.get_field("stored").storage
    services.set_retention(widget=widget, chats_days=30)
    later = timezone.now() + timedelta(days=31)
    with django_capture_on_commit_callbacks(execute=True):
        counts = services.erase_expired_chats(now=later)
    assert counts["chats"] == 2
    assert not Chat.objects.filter(pk__in=[c.pk for c in person.chats]).exists()
    assert not File.objects.filter(pk__in=[person.files[0].pk, person.files[1].pk]).exists()
    assert not any(storage.exists(name) for name in person.stored_names[:2])


def test_the_job_deletes_in_bounded_batches(widget, monkeypatch):
    services.set_retention(widget=widget, chats_days=30)
    chat = aged_chat(widget, days=60, messages=7)
    sizes = []
    real = services._delete_messages

    def counting(**kwargs):
        result = real(**kwargs)
        sizes.append(kwargs["batch_size"])
        return result

    monkeypatch.setattr(services, "_delete_messages", counting)
    deleted_per_transaction = []
    real_delete_files = services._delete_files

    def per_batch(**kwargs):
        deleted_per_transaction.append(Message.objects.filter(chat=chat).count())
        return real_delete_files(**kwargs)

    monkeypatch.setattr(services, "_delete_files", per_batch)
    counts = services.erase_expired_chats(batch_size=3)
    assert counts["messages"] == 7 and counts["chats"] == 1
    assert deleted_per_transaction == [4, 1, 0]  # 3, 3 and 1 message a transaction


def test_a_chat_written_to_meanwhile_is_kept_with_its_new_messages(widget, monkeypatch):
    services.set_retention(widget=widget, chats_days=30)
    chat = aged_chat(widget, days=60, messages=2)
    real = services._redact_webhook_log
    fresh = []

    def a_message_arrives(**kwargs):
        if not fresh:
            fresh.append(MessageFactory(chat=chat, body="back again"))
        return real(**kwargs)

    monkeypatch.setattr(services, "_redact_webhook_log", a_message_arrives)
    services.erase_expired_chats()
    assert Chat.objects.filter(pk=chat.pk).exists()
    assert list(Message.objects.filter(chat=chat).values_list("body", flat=True)) == ["back again"]


def test_the_job_logs_counts_only(widget, caplog):
    services.set_retention(widget=widget, chats_days=30)
    aged_chat(widget, days=60)
    with caplog.at_level("INFO", logger="apps.privacy.services"):
        services.erase_expired_chats()
    (entry,) = [r for r in caplog.records if r.getMessage().startswith("retention")]
    assert entry.getMessage() == "retention: expired chats erased"
    assert (entry.chats, entry.messages) == (1, 2)  # counts, never what the chats said


@pytest.mark.parametrize("days", [0, 1, 29, 3651])
def test_admin_refuses_a_retention_outside_30_to_3650_days_and_changes_nothing(admin_client, widget, days):
    response = admin_client.post("/admin/privacy/retentionpolicy/add/", {"widget": widget.pk, "chats_days": days})
    assert response.status_code == 200  # the form again, with its error
    assert "chats_days" in response.context["adminform"].form.errors
    assert not RetentionPolicy.objects.filter(widget=widget).exists()


def test_set_retention_refuses_a_window_outside_30_to_3650_days(widget):
    with pytest.raises(ValueError):
        services.set_retention(widget=widget, chats_days=1)
    assert not RetentionPolicy.objects.filter(widget=widget).exists()


def test_admin_sets_a_retention_inside_the_bounds(admin_client, widget):
    response = admin_client.post("/admin/privacy/retentionpolicy/add/", {"widget": widget.pk, "chats_days": 90})
    assert response.status_code == 302
    assert RetentionPolicy.objects.get(widget=widget).chats_days == 90


def test_the_job_forgets_the_demand_signals_of_expired_questions_and_keeps_newer_ones(widget):
    services.set_retention(widget=widget, chats_days=30)
    chat = aged_chat(widget, days=40, messages=1)
    Message.objects.filter(chat=chat).update(body="Where is my parcel 42?")
    at = timezone.now() - timedelta(days=40)
    DemandSignalFactory(widget=widget, topic="where is my parcel 42?", sample="Where is my parcel 42?", occurred_at=at)
    newer = DemandSignalFactory(widget=widget, topic="where is my parcel 42?", occurred_at=timezone.now())
    other = DemandSignalFactory(widget=widget, topic="gift cards", occurred_at=at)

    services.erase_expired_chats()

    assert set(DemandSignal.objects.filter(widget=widget).values_list("pk", flat=True)) == {newer.pk, other.pk}
