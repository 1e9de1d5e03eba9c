"""The audit log: one row per audited write from the API, Django admin and operator commands, in
the write's transaction, secrets hidden; GET /v1/audit-log; read-only admin; the 365-day purge."""

from __future__ import annotations

import ipaddress
import json
import uuid
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from apps.ai.models import Credential
from apps.audit import services as audit
from apps.audit.models import AuditEntry
from apps.audit.services import purge_old_entries
from apps.core import services as core
from apps.core.models import ApiToken
from apps.webhooks.models import Subscription
from tests.support.factories import AgentFactory
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db
LOG = "/api/v1/audit-log"


@pytest.fixture(autouse=True)
def public_dns(monkeypatch):
    from apps.platform import outbound

    monkeypatch.setattr(outbound.policy, "resolve_host", lambda host, port: [ipaddress.ip_address("93.184.216.34")])


def idem():
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"key-{uuid.uuid4().hex}"}


def rows(widget, action=None):
    """The widget's rows, oldest first; the test tokens' own `token.issued` rows left out unless asked."""
    queryset = AuditEntry.objects.filter(widget=widget).order_by("at", "pk")
    return list(queryset.filter(action=action) if action else queryset.exclude(action="token.issued"))


def reader(api):
    """A client with `audit:read`; the row of its own token's issuing is removed."""
    client = api(scopes=["audit:read"])
    AuditEntry.objects.all().delete()
    return client


def only(widget, action) -> AuditEntry:
    (row,) = rows(widget, action)
    return row


def no_secret_anywhere(*secrets):
    dumped = json.dumps(list(AuditEntry.objects.values("changes", "actor_name", "target_id")), ensure_ascii=False)
    for secret in secrets:
        assert secret not in dumped


# --- from the API: the token is the actor ------------------------------------------------------------


def test_ai_credential_created_changed_and_retired_through_the_api(api, widget):
    client = api(name="ai setup")
    created = client.post(
        "/api/v1/ai/credentials",
        {"provider": "openai", "api_key": "sk-secret-123", "model": "gpt-x"},
        format="json",
        **idem(),
    )
    assert created.status_code == 201, created.content
    pk = created.json()["id"]
    client.patch(f"/api/v1/ai/credentials/{pk}", {"api_key": "sk-rotated-456"}, format="json", **idem())
    client.patch(f"/api/v1/ai/credentials/{pk}", {"is_active": False}, format="json", **idem())

    row = only(widget, "ai_credential.created")
    assert (row.actor_type, row.actor_name, row.target_type, row.target_id) == (
        "token",
        "ai setup",
        "ai_credential",
        str(pk),
    )
    assert row.changes["model"] == {"from": None, "to": "gpt-x"}
    assert row.changes["api_key"] == {"from": "[hidden]", "to": "[hidden]"}
    assert "signing_secret" not in row.changes  # never given: no change
    assert only(widget, "ai_credential.changed").changes == {"api_key": {"from": "[hidden]", "to": "[hidden]"}}
    assert only(widget, "ai_credential.retired").changes == {"is_active": {"from": True, "to": False}}
    encrypted = Credential.objects.get(pk=pk).api_key_encrypted
    no_secret_anywhere("sk-secret-123", "sk-rotated-456", encrypted)


def test_ai_settings_and_widget_settings_changes_through_the_api(api, widget):
    client = api(name="owner")
    client.patch("/api/v1/ai/settings", {"rag_enabled": True}, format="json", **idem())
    client.patch("/api/v1/widget/settings", {"widget_theme": "dark"}, format="json", **idem())
    client.patch("/api/v1/widget/settings", {"widget_theme": "dark"}, format="json", **idem())  # no change
    ai = only(widget, "ai_settings.changed")
    assert ai.actor_name == "owner" and ai.changes["rag_enabled"]["to"] is True
    settings_row = only(widget, "widget_settings.changed")
    assert settings_row.changes == {"widget_theme": {"from": None, "to": "dark"}}


def test_business_hours_changes_through_the_api(api, widget):
    client = api(name="owner")
    body = {
        "enabled": True,
        "timezone": "Europe/Berlin",
        "weekly": {day: [["09:00", "18:00"]] for day in ("mon", "tue", "wed", "thu", "fri")} | {"sat": [], "sun": []},
        "holidays": [],
        "outside_hours": "offline_form",
    }
    assert client.put("/api/v1/widget/business-hours", body, format="json", **idem()).status_code == 200
    assert client.put("/api/v1/widget/business-hours", body, format="json", **idem()).status_code == 200  # same
    row = only(widget, "business_hours.changed")
    assert row.actor_name == "owner" and row.target_type == "business_hours"
    assert row.changes["timezone"]["to"] == "Europe/Berlin" and row.changes["enabled"]["to"] is True


def test_webhook_subscription_created_changed_and_deleted_through_the_api(api, widget):
    client = api(name="integrator")
    created = client.post(
        "/api/v1/webhook-subscriptions",
        {"url": "https://hooks.example.com/a", "events": ["message.created"]},
        format="json",
        **idem(),
    )
    assert created.status_code == 201, created.content
    pk = created.json()["id"]
    client.patch(f"/api/v1/webhook-subscriptions/{pk}", {"is_active": False}, format="json", **idem())
    assert client.delete(f"/api/v1/webhook-subscriptions/{pk}", **idem()).status_code == 204
    assert [r.action for r in rows(widget)] == [
        "webhook_subscription.created",
        "webhook_subscription.changed",
        "webhook_subscription.deleted",
    ]
    made, changed, deleted = rows(widget)
    assert made.changes["url"] == {"from": None, "to": "https://hooks.example.com/a"}
    assert made.changes["secret"] == {"from": "[hidden]", "to": "[hidden]"}
    assert changed.changes == {"is_active": {"from": True, "to": False}}
    assert deleted.changes["url"] == {"from": "https://hooks.example.com/a", "to": None}
    assert {r.actor_name for r in rows(widget)} == {"integrator"}
    no_secret_anywhere(created.json().get("secret", "never-shown"))


def test_a_refused_write_records_nothing(api, widget):
    client = api()
    response = client.patch("/api/v1/widget/settings", {"widget_theme": "no-such-theme"}, format="json", **idem())
    assert response.status_code == 422
    assert rows(widget) == []


# --- operator commands and services: the actor is system ---------------------------------------------


def test_token_issued_and_revoked_by_an_operator_command_are_recorded_as_system(widget):
    issued = core.issue_token(widget=widget, scopes=["chats:read"], name="crm")
    core.revoke_token(token=issued.token)
    made, revoked = rows(widget, "token.issued")[0], only(widget, "token.revoked")
    assert (made.actor_type, made.actor_name, made.target_id) == ("system", "system", issued.token.prefix)
    assert made.changes["scopes"] == {"from": None, "to": ["chats:read"]}
    assert revoked.target_id == issued.token.prefix
    no_secret_anywhere(issued.plaintext, issued.token.secret_hash)


def test_support_configuration_by_the_operator_command_is_recorded(widget):
    agent = AgentFactory(widget=widget)
    config = {"enabled": False, "operator_agent_id": agent.pk}
    call_command("configure_support", "--widget", str(widget.pk), "--config", json.dumps(config), stdout=None)
    row = only(widget, "support_config.changed")
    assert row.actor_type == "system" and row.changes["operator_id"] == {"from": None, "to": agent.pk}


# --- from Django admin: the staff user is the actor ------------------------------------------------


def test_admin_saves_and_deletes_are_recorded_with_the_staff_user(admin_client, widget):
    from apps.ai.tests.factories import CredentialFactory

    credential = CredentialFactory(widget=widget, provider="openai", api_key="sk-admin-789")
    response = admin_client.post(
        f"/admin/ai/credential/{credential.pk}/change/",
        {
            "widget": widget.pk,
            "base_url": credential.base_url,
            "model": "gpt-y",
            "is_active": "",
            "assistant": "",
            "operator": "",
            "backup_credential": "",
            "created_at_0": "2026-01-01",
            "created_at_1": "00:00:00",
        },
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    row = only(widget, "ai_credential.retired")
    assert (row.actor_type, row.actor_name) == ("staff", "admin")
    assert row.changes["model"]["to"] == "gpt-y" and row.changes["is_active"] == {"from": True, "to": False}

    sub = Subscription.objects.create(widget=widget, url="https://hooks.example.com/b", events=["message.created"])
    response = admin_client.post(f"/admin/webhooks/subscription/{sub.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    deleted = only(widget, "webhook_subscription.deleted")
    assert deleted.actor_type == "staff" and deleted.target_id == str(sub.pk)
    no_secret_anywhere("sk-admin-789")


def test_a_token_issued_and_revoked_in_admin_names_the_staff_user(admin_client, widget):
    response = admin_client.post(
        "/admin/core/apitoken/add/", {"widget": widget.pk, "name": "from admin", "scope_choices": ["chats:read"]}
    )
    assert response.status_code == 302, response.content[:2000]
    token = ApiToken.objects.get(name="from admin")
    admin_client.post("/admin/core/apitoken/", {"action": "revoke", "_selected_action": [token.pk]})
    assert only(widget, "token.issued").actor_type == "staff"
    assert only(widget, "token.revoked").actor_name == "admin"


def test_the_audit_log_is_read_only_in_admin(admin_client, widget):
    audit.record(widget=widget, action="retention.changed", target_type="widget")
    row = AuditEntry.objects.get()
    assert admin_client.get("/admin/audit/auditentry/").status_code == 200
    assert admin_client.get("/admin/audit/auditentry/add/").status_code == 403
    assert admin_client.post(f"/admin/audit/auditentry/{row.pk}/delete/", {"post": "yes"}).status_code == 403
    assert AuditEntry.objects.filter(pk=row.pk).exists()


# --- secrets ----------------------------------------------------------------------------------------


def test_record_hides_secret_fields_by_name_and_by_declaration():
    hidden = audit.diff({"api_key": "a", "color": "red"}, {"api_key": "b", "color": "blue"}, secrets=["color"])
    assert hidden == {
        "api_key": {"from": "[hidden]", "to": "[hidden]"},
        "color": {"from": "[hidden]", "to": "[hidden]"},
    }


# --- the list ---------------------------------------------------------------------------------------


def _entry(widget, action, at):
    row = audit.record(widget=widget, action=action, target_type="widget", target_id=widget.button_guid)
    AuditEntry.objects.filter(pk=row.pk).update(at=at)
    return row


def test_the_list_is_newest_first_with_the_documented_row_shape(api, widget):
    now = timezone.now()
    client = reader(api)
    older = _entry(widget, "retention.changed", now - timedelta(days=2))
    newer = _entry(widget, "widget_settings.changed", now - timedelta(days=1))
    body = client.get(LOG).json()
    assert [row["id"] for row in body["data"]] == [newer.pk, older.pk]
    assert body["data"][0] == {
        "id": newer.pk,
        "at": (now - timedelta(days=1)).isoformat(),
        "actor": {"type": "system", "id": None, "name": "system"},
        "action": "widget_settings.changed",
        "target": {"type": "widget", "id": widget.button_guid},
        "changes": {},
    }


def test_the_list_filters_by_action_and_time_and_pages_by_cursor(api, widget):
    now = timezone.now()
    client = reader(api)
    for days in range(5):
        _entry(widget, "retention.changed", now - timedelta(days=days, hours=1))
    _entry(widget, "token.issued", now - timedelta(hours=1))
    assert [r["action"] for r in client.get(LOG, {"action": "token.issued"}).json()["data"]] == ["token.issued"]
    window = client.get(
        LOG, {"from": (now - timedelta(days=3)).isoformat(), "to": (now - timedelta(days=1)).isoformat()}
    )
    assert len(window.json()["data"]) == 2
    first = client.get(LOG, {"limit": 4}).json()
    second = client.get(LOG, {"limit": 4, "cursor": first["next_cursor"]}).json()
    assert len(first["data"]) == 4 and len(second["data"]) == 2
    assert not {r["id"] for r in first["data"]} & {r["id"] for r in second["data"]}


def test_the_list_shows_the_tokens_widget_only(api, widget, other_widget):
    client = reader(api)
    _entry(widget, "retention.changed", timezone.now())
    _entry(other_widget, "retention.changed", timezone.now())
    data = client.get(LOG).json()["data"]
    assert len(data) == 1 and data[0]["target"]["id"] == widget.button_guid


def test_the_list_rules(api, widget):
    assert_problem(APIClient().get(LOG), 401)
    assert_problem(api(scopes=["widget:read"]).get(LOG), 403, "missing_scope")
    assert_problem(api(scopes=["audit:read"]).get(LOG, {"from": "yesterday"}), 422)
    assert_problem(api(scopes=["audit:read"]).get(LOG, {"actor": "x"}), 422)


def test_rows_older_than_365_days_are_purged(widget):
    old = _entry(widget, "retention.changed", timezone.now() - timedelta(days=366))
    kept = _entry(widget, "retention.changed", timezone.now() - timedelta(days=364))
    assert purge_old_entries(batch_size=1) == 1
    assert list(AuditEntry.objects.values_list("pk", flat=True)) == [kept.pk]
    assert not AuditEntry.objects.filter(pk=old.pk).exists()


# --- field names: the API's, never a storage column -----------------------------------------------


def test_every_encrypted_column_is_recorded_under_a_secret_api_name():
    from django.apps import apps

    for model in apps.get_models():
        for field in model._meta.concrete_fields:
            if field.attname.endswith("_encrypted"):
                name = audit.field_name(field.attname)
                assert not name.endswith("_encrypted") and audit.is_secret(name), (model._meta.label, name)


def test_a_secret_given_on_neither_side_is_no_change_and_a_given_one_is_hidden():
    assert audit.diff({}, {"api_key": "gAAAA-cipher", "signing_secret": ""}) == {
        "api_key": {"from": "[hidden]", "to": "[hidden]"}
    }
    assert audit.diff({"signing_secret": ""}, {"signing_secret": None}) == {}
