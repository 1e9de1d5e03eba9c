"""Webhook subscriptions API, delivery log, redelivery and the event catalogue."""

import uuid

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from apps.audit.models import AuditEntry
from apps.core import events
from apps.core import services as core_services
from apps.core.crypto import decrypt_secret
from apps.core.models import OutboxEvent
from apps.webhooks import services
from apps.webhooks.models import Attempt, Delivery, EventSwitch, Subscription
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

BASE = "/api/v1/webhook-subscriptions"
_keys = iter(range(10**6))


def idem():
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"w-{next(_keys)}"}


@pytest.fixture(autouse=True)
def public_dns(monkeypatch):
    """Hosts resolve to a public documentation-free address; `private.test` to a private one."""
    import ipaddress

    from apps.platform import outbound

    def resolve(host, port):
        if host == "private.test":
            return [ipaddress.ip_address("10.0.0.5")]
        return [ipaddress.ip_address("93.184.216.34")]

    monkeypatch.setattr(outbound.policy, "resolve_host", resolve)


def create(client, **body):
    body = {"url": "https://hooks.example.com/a", "events": ["message.created"], **body}
    return client.post(BASE, body, format="json", **idem())


def emit_message(widget):
    with transaction.atomic():
        event = events.emit(
            widget,
            events.MESSAGE_CREATED,
            chat_id=1,
            message_id=2,
            client_id="c" * 32,
            author_type="USER",
            source="api",
        )
    events.fan_out(event.pk)
    return event


# --- create ------------------------------------------------------------------------------------------


def test_create_returns_the_generated_secret_once(api, widget):
    client = api(scopes=["webhooks:write", "webhooks:read"])
    response = create(client)
    assert response.status_code == 201
    body = response.json()
    assert body["secret"].startswith("whsec_") and body["is_active"] is True and body["is_legacy_compat"] is False
    sub = Subscription.objects.get(pk=body["id"])
    assert body["secret"] not in sub.secret_encrypted and decrypt_secret(sub.secret_encrypted) == body["secret"]
    assert "secret" not in client.get(f"{BASE}/{sub.pk}").json()
    assert all("secret" not in row for row in client.get(BASE).json()["data"])


def test_list_items_are_the_subscriptions_as_read_alone_without_the_secret(api):
    client = api()
    first = create(client, events=["message.created", "chat.closed"]).json()
    second = create(client, url="https://hooks.example.com/b", is_legacy_compat=True, events=["chat_accepted"]).json()
    listed = client.get(BASE).json()
    assert listed["next_cursor"] is None
    assert listed["data"] == [client.get(f"{BASE}/{pk}").json() for pk in (second["id"], first["id"])]
    assert all("secret" not in item and "secret_encrypted" not in item for item in listed["data"])


def test_the_list_pages_newest_first_by_cursor_within_the_widget(api, other_widget):
    client = api()
    made = [create(client, url=f"https://hooks.example.com/{n}").json()["id"] for n in range(5)]
    create(api(w=other_widget), url="https://hooks.example.com/theirs")
    with CaptureQueriesContext(connection) as queries:
        first = client.get(BASE, {"limit": 3}).json()
    assert len([q for q in queries if "webhooks_subscription" in q["sql"]]) == 1  # the page, in one query
    second = client.get(BASE, {"limit": 3, "cursor": first["next_cursor"]}).json()
    assert [row["id"] for row in first["data"] + second["data"]] == made[::-1]
    assert second["next_cursor"] is None
    # a cursor is bound to its widget's list
    assert_problem(api(w=other_widget).get(BASE, {"cursor": first["next_cursor"]}), 422, "validation_failed")


def test_create_keeps_a_given_secret(api):
    response = create(api(), secret="s" * 20)
    assert response.json()["secret"] == "s" * 20


@pytest.mark.parametrize(
    "url",
    [
        "http://hooks.example.com/a",
        "https://user:pw@hooks.example.com/a",
        "https://private.test/a",
        "https://127.0.0.1/a",
        "https://169.254.169.254/latest",
        "ftp://hooks.example.com",
        "not a url",
    ],
)
def test_create_refuses_non_https_and_private_destinations(api, url):
    body = assert_problem(create(api(), url=url), 422)
    assert "url" in body["errors"]
    assert not Subscription.objects.exists()


def test_port_zero_is_refused(api):
    body = assert_problem(create(api(), url="https://hooks.example.com:0/a"), 422)
    assert body["errors"]["url"] == ["Refused destination (invalid_port)."]
    assert not Subscription.objects.exists()


def test_an_unresolvable_and_a_private_host_get_the_same_answer(api, monkeypatch):
    import ipaddress

    from apps.platform import outbound

    def resolve(host, port):
        if host == "private.test":
            return [ipaddress.ip_address("10.0.0.5")]
        raise outbound.OutboundError("resolve_failed")

    monkeypatch.setattr(outbound.policy, "resolve_host", resolve)
    private = assert_problem(create(api(), url="https://private.test/a"), 422)
    missing = assert_problem(create(api(), url="https://nowhere.test/a"), 422)
    assert private["errors"] == missing["errors"]


def test_second_subscription_to_the_same_url_is_409(api):
    client = api()
    assert create(client).status_code == 201
    assert_problem(create(client), 409)


def test_same_url_on_another_widget_is_fine(api, other_widget):
    assert create(api()).status_code == 201
    assert create(api(w=other_widget)).status_code == 201


def test_chat_updated_as_native_name_is_422(api):
    body = assert_problem(create(api(), events=["chat.updated"]), 422)
    assert "events" in body["errors"]


def test_native_subscriptions_accept_every_native_name(api):
    assert create(api(), events=list(events.CATALOGUE)).status_code == 201


def test_legacy_subscription_accepts_only_legacy_names(api):
    client = api()
    assert_problem(create(client, events=["message.created"], is_legacy_compat=True), 422)
    ok = create(client, events=["chat_finished", "client_updated"], is_legacy_compat=True)
    assert ok.status_code == 201
    assert_problem(create(client, url="https://hooks.example.com/b", events=["chat_finished"]), 422)


def test_create_needs_idempotency_key_and_scope(api):
    assert_problem(
        api().post(BASE, {"url": "https://x.example.com", "events": ["message.created"]}, format="json"), 400
    )
    assert_problem(create(api(scopes=["webhooks:read"])), 403, "missing_scope")


# --- patch, rotate, delete ------------------------------------------------------------------------------


def test_patch_is_merge_safe(api, widget):
    client = api()
    sub_id = create(client).json()["id"]
    response = client.patch(f"{BASE}/{sub_id}", {"is_active": False}, format="json", **idem())
    assert response.status_code == 200
    body = response.json()
    assert body["is_active"] is False and body["events"] == ["message.created"]


def test_secret_is_not_patchable(api):
    client = api()
    sub_id = create(client).json()["id"]
    body = assert_problem(client.patch(f"{BASE}/{sub_id}", {"secret": "x" * 20}, format="json", **idem()), 422)
    assert list(body["errors"]) == ["secret"]


def test_switching_to_legacy_needs_legacy_events(api):
    client = api()
    sub_id = create(client).json()["id"]
    assert_problem(client.patch(f"{BASE}/{sub_id}", {"is_legacy_compat": True}, format="json", **idem()), 422)
    ok = client.patch(
        f"{BASE}/{sub_id}", {"is_legacy_compat": True, "events": ["chat_accepted"]}, format="json", **idem()
    )
    assert ok.status_code == 200 and ok.json()["is_legacy_compat"] is True


def test_rotate_secret_is_immediate(api):
    client = api()
    created = create(client).json()
    response = client.post(f"{BASE}/{created['id']}/rotate-secret", {}, format="json", **idem())
    assert response.status_code == 200
    new = response.json()["secret"]
    assert new != created["secret"]
    assert decrypt_secret(Subscription.objects.get(pk=created["id"]).secret_encrypted) == new


def test_delete_takes_no_idempotency_key(api):
    client = api()
    sub_id = create(client).json()["id"]
    assert client.delete(f"{BASE}/{sub_id}").status_code == 204
    assert_problem(client.get(f"{BASE}/{sub_id}"), 404)


def test_foreign_subscription_is_404_everywhere(api, other_widget):
    foreign = create(api(w=other_widget)).json()["id"]
    client = api()
    assert_problem(client.get(f"{BASE}/{foreign}"), 404)
    assert_problem(client.patch(f"{BASE}/{foreign}", {"is_active": False}, format="json", **idem()), 404)
    assert_problem(client.delete(f"{BASE}/{foreign}"), 404)
    assert_problem(client.get(f"{BASE}/{foreign}/deliveries"), 404)
    assert Subscription.objects.get(pk=foreign).is_active


# --- delivery log and redelivery ------------------------------------------------------------------------------


def test_fan_out_logs_a_pending_delivery_with_masked_payload(api, widget):
    client = api()
    sub_id = create(client).json()["id"]
    event = emit_message(widget)
    rows = client.get(f"{BASE}/{sub_id}/deliveries").json()["data"]
    assert len(rows) == 1
    row = rows[0]
    assert row["status"] == "pending" and row["event_type"] == "message.created"
    assert row["payload"] == {"id": str(event.pk), "type": "message.created", "data": {**event.data}}
    assert row["is_redeliverable"] is False


def test_wired_event_is_logged_skipped_until_enabled(api, widget):
    client = api()
    sub_id = create(client, events=["agent.online"]).json()["id"]
    with transaction.atomic():
        event = events.emit(widget, events.AGENT_ONLINE, operator_id=1)
    events.fan_out(event.pk)
    assert [r["status"] for r in client.get(f"{BASE}/{sub_id}/deliveries").json()["data"]] == ["skipped"]
    EventSwitch.objects.create(event_type="agent.online", enabled=True)
    with transaction.atomic():
        later = events.emit(widget, events.AGENT_ONLINE, operator_id=1)
    events.fan_out(later.pk)
    assert Delivery.objects.get(event=later).status == "pending"


def test_deliveries_filters(api, widget):
    client = api()
    sub_id = create(client, events=["message.created", "agent.online"]).json()["id"]
    emit_message(widget)
    with transaction.atomic():
        e = events.emit(widget, events.AGENT_ONLINE, operator_id=1)
    events.fan_out(e.pk)
    assert len(client.get(f"{BASE}/{sub_id}/deliveries", {"status": "skipped"}).json()["data"]) == 1
    assert len(client.get(f"{BASE}/{sub_id}/deliveries", {"event_type": "message.created"}).json()["data"]) == 1
    assert_problem(client.get(f"{BASE}/{sub_id}/deliveries", {"status": "lost"}), 422)
    assert_problem(client.get(f"{BASE}/{sub_id}/deliveries", {"event_type": "chat.updated"}), 422)


def test_redeliver_makes_a_new_delivery_with_the_same_event(api, widget):
    client = api()
    sub_id = create(client).json()["id"]
    emit_message(widget)
    original = Delivery.objects.get()
    Delivery.objects.filter(pk=original.pk).update(status="failed")
    response = client.post(
        f"{BASE}/{sub_id}/redeliver", {"delivery_id": str(original.delivery_id)}, format="json", **idem()
    )
    assert response.status_code == 202 and response.json()["envelope"] == "native"
    copy = Delivery.objects.get(delivery_id=response.json()["delivery_id"])
    assert copy.event_id == original.event_id and copy.delivery_id != original.delivery_id
    assert copy.body == original.body


def test_redeliver_unknown_or_pending_is_422(api, widget):
    client = api()
    sub_id = create(client).json()["id"]
    emit_message(widget)
    pending = Delivery.objects.get()
    assert_problem(
        client.post(f"{BASE}/{sub_id}/redeliver", {"delivery_id": str(uuid.uuid4())}, format="json", **idem()), 422
    )
    assert_problem(
        client.post(f"{BASE}/{sub_id}/redeliver", {"delivery_id": str(pending.delivery_id)}, format="json", **idem()),
        422,
    )


def test_redeliver_into_legacy_needs_a_legacy_equivalent(api, widget):
    client = api()
    sub_id = create(client, events=["message.created", "chat.closed"]).json()["id"]
    EventSwitch.objects.create(event_type="chat.closed", enabled=True)
    emit_message(widget)
    with transaction.atomic():
        closed = events.emit(widget, events.CHAT_CLOSED, chat_id=1, reason="expired")
    events.fan_out(closed.pk)
    Delivery.objects.update(status="delivered")
    client.patch(f"{BASE}/{sub_id}", {"is_legacy_compat": True, "events": ["chat_finished"]}, format="json", **idem())
    message_row = Delivery.objects.get(event_type="message.created")
    closed_row = Delivery.objects.get(event_type="chat.closed")
    body = assert_problem(
        client.post(
            f"{BASE}/{sub_id}/redeliver", {"delivery_id": str(message_row.delivery_id)}, format="json", **idem()
        ),
        422,
    )
    assert "delivery_id" in body["errors"]
    ok = client.post(
        f"{BASE}/{sub_id}/redeliver", {"delivery_id": str(closed_row.delivery_id)}, format="json", **idem()
    )
    assert ok.status_code == 202 and ok.json()["envelope"] == "legacy"


def test_legacy_subscription_logs_only_final_failures(api, widget):
    client = api()
    sub_id = create(client, events=["chat_finished"], is_legacy_compat=True).json()["id"]
    EventSwitch.objects.create(event_type="chat.closed", enabled=True)
    with transaction.atomic():
        event = events.emit(widget, events.CHAT_CLOSED, chat_id=1, reason="expired")
    events.fan_out(event.pk)
    assert client.get(f"{BASE}/{sub_id}/deliveries").json()["data"] == []
    Delivery.objects.update(status="failed")
    rows = client.get(f"{BASE}/{sub_id}/deliveries").json()["data"]
    assert [r["status"] for r in rows] == ["failed"] and rows[0]["is_redeliverable"] is False


def test_delivery_is_dropped_when_the_subscription_is_deleted(widget):
    sub, _ = services.create_subscription(widget=widget, url="https://hooks.example.com/x", events=["message.created"])
    emit_message(widget)
    services.delete_subscription(widget=widget, subscription=sub)
    assert not Delivery.objects.exists()


def log_of(widget, subscription, count: int) -> None:
    """`count` deliveries of `subscription`, one event each, the first two with an attempt."""
    made = OutboxEvent.objects.bulk_create(
        [OutboxEvent(widget=widget, type="message.created", data={}) for _ in range(count)], batch_size=5000
    )
    rows = Delivery.objects.bulk_create(
        [
            Delivery(widget=widget, subscription=subscription, event=event, event_type="message.created", body="{}")
            for event in made
        ],
        batch_size=5000,
    )
    Attempt.objects.bulk_create([Attempt(delivery=row, number=1) for row in rows[:2]])


def test_a_subscription_is_deleted_with_its_delivery_log_in_batches(widget):
    sub, _ = services.create_subscription(widget=widget, url="https://hooks.example.com/x", events=["message.created"])
    other, _ = services.create_subscription(
        widget=widget, url="https://hooks.example.com/y", events=["message.created"]
    )
    log_of(widget, sub, 5)
    log_of(widget, other, 2)
    with CaptureQueriesContext(connection) as ctx:
        core_services.delete_with_dependents(Subscription.objects.get(pk=sub.pk), batch_size=2)
    # three batches of at most two deliveries, each naming its own keys only
    assert len([q for q in ctx.captured_queries if q["sql"].startswith('DELETE FROM "webhooks_delivery"')]) == 3
    assert not Subscription.objects.filter(pk=sub.pk).exists()
    assert not Delivery.objects.filter(subscription_id=sub.pk).exists()
    assert Delivery.objects.filter(subscription=other).count() == 2 and Attempt.objects.count() == 2


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's limit of 65,535 parameters")
def test_a_subscription_with_more_deliveries_than_a_statement_takes_keys_is_deleted(api, widget):
    client = api()
    sub_id = create(client).json()["id"]
    log_of(widget, Subscription.objects.get(pk=sub_id), 66_000)
    assert client.delete(f"{BASE}/{sub_id}").status_code == 204
    assert not Delivery.objects.filter(subscription_id=sub_id).exists() and not Attempt.objects.exists()
    assert AuditEntry.objects.filter(action="webhook_subscription.deleted", target_id=str(sub_id)).exists()


# --- catalogue ---------------------------------------------------------------------------------------------


def test_catalogue_lists_both_vocabularies(api):
    rows = api(scopes=["webhooks:read"]).get("/api/v1/webhook-events").json()["data"]
    native = {r["name"]: r for r in rows if r["vocabulary"] == "native"}
    legacy = {r["name"]: r for r in rows if r["vocabulary"] == "legacy"}
    assert len(native) == 15 and len(legacy) == 5
    assert native["message.created"]["enabled"] is True and native["chat.closed"]["enabled"] is False
    assert native["contact.erased"]["status"] == "Live"  # a Wave 3 event (product-decisions.md)
    assert native["chat.labels_changed"]["status"] == "Live"  # Wave 4, team work
    assert native["chat.labels_changed"]["data_fields"] == ["button_guid", "chat_id", "labels"]
    assert legacy["chat_finished"]["maps_to"] == "chat.closed"
    assert all(r["triggered_by"] for r in rows)
    assert native["chat.transferred"]["data_fields"] == [
        "button_guid",
        "chat_id",
        "client_guid",
        "from_operator_id",
        "to_operator_id",
        "author_type",
        "source",
    ]


def test_catalogue_reflects_the_admin_switch(api):
    EventSwitch.objects.create(event_type="chat.closed", enabled=True)
    EventSwitch.objects.create(event_type="message.created", enabled=False)
    rows = {r["name"]: r for r in api().get("/api/v1/webhook-events").json()["data"]}
    assert rows["chat.closed"]["enabled"] and rows["chat_finished"]["enabled"]
    assert not rows["message.created"]["enabled"]
