"""Alerts, demand signals, the marketplace and the integration binding."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.ai import marketplace, selectors
from apps.ai.models import Alert, Assistant, IntegrationBinding
from apps.ai.tests.conftest import AI_ALL, idem
from apps.ai.tests.factories import AlertFactory, AssistantFactory, CredentialFactory, DemandSignalFactory
from apps.core.models import ApiToken
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db


# --- alerts ------------------------------------------------------------------------------------------------


def test_alerts_state_filter(client, widget, other_widget):
    open_ = AlertFactory(widget=widget)
    done = AlertFactory(widget=widget, acknowledged_at=timezone.now())
    AlertFactory(widget=other_widget)
    ids = lambda q: [a["id"] for a in client.get(f"/api/v1/ai/alerts{q}").json()["data"]]  # noqa: E731
    assert ids("") == [done.pk, open_.pk]
    assert ids("?state=unacknowledged") == [open_.pk]
    assert ids("?state=acknowledged") == [done.pk]
    assert ids("?state=all") == [done.pk, open_.pk]
    assert_problem(client.get("/api/v1/ai/alerts?state=open"), 422)


def test_acknowledge_some_then_all(client, widget, other_widget):
    a, b, c = (AlertFactory(widget=widget) for _ in range(3))
    foreign = AlertFactory(widget=other_widget)
    r = client.post("/api/v1/ai/alerts/acknowledge", {"ids": [a.pk]}, format="json", **idem())
    assert r.json() == {"acknowledged": 1, "ids": [a.pk]}
    assert_problem(client.post("/api/v1/ai/alerts/acknowledge", {"ids": [foreign.pk]}, format="json", **idem()), 422)
    assert_problem(client.post("/api/v1/ai/alerts/acknowledge", {"ids": ["x"]}, format="json", **idem()), 422)
    r = client.post("/api/v1/ai/alerts/acknowledge", {}, format="json", **idem())
    assert r.json() == {"acknowledged": 2, "ids": sorted([b.pk, c.pk])}
    assert Alert.objects.get(pk=foreign.pk).acknowledged_at is None


@pytest.mark.parametrize("value", [2**63, 2**70])
def test_acknowledging_an_id_past_any_row_is_the_unknown_id_422(client, widget, value):
    alert = AlertFactory(widget=widget)
    r = client.post("/api/v1/ai/alerts/acknowledge", {"ids": [alert.pk, value]}, format="json", **idem())
    assert_problem(r, 422)
    assert r.json()["errors"] == {"ids": [f"Unknown alert ids: {value}."]}
    assert Alert.objects.get(pk=alert.pk).acknowledged_at is None


def test_alert_scopes(api):
    assert_problem(api(["ai:write"]).get("/api/v1/ai/alerts"), 403)
    assert_problem(api(["ai:read"]).post("/api/v1/ai/alerts/acknowledge", {}, format="json", **idem()), 403)


# --- demand signals ----------------------------------------------------------------------------------------


def test_demand_signals_filters(client, widget, other_widget):
    now = timezone.now()
    old = DemandSignalFactory(widget=widget, occurred_at=now - timedelta(days=10), category="escalation")
    new = DemandSignalFactory(widget=widget, occurred_at=now, category="unanswered")
    DemandSignalFactory(widget=other_widget)
    ids = lambda q: [x["id"] for x in client.get(f"/api/v1/ai/demand-signals{q}").json()["data"]]  # noqa: E731
    assert ids("") == [new.pk, old.pk]
    assert ids("?category=escalation") == [old.pk]
    assert ids("?limit=1") == [new.pk]
    day = (now - timedelta(days=3)).date().isoformat()
    assert ids(f"?from={day}") == [new.pk]
    assert ids(f"?to={day}") == [old.pk]
    for bad in ("?category=x", "?limit=0", "?limit=101", "?from=yesterday", "?cursor=abc"):
        assert_problem(client.get(f"/api/v1/ai/demand-signals{bad}"), 422)


# --- marketplace -------------------------------------------------------------------------------------------


def test_templates_paged_by_page(client):
    body = client.get("/api/v1/ai/marketplace/templates?limit=4").json()
    assert body["page"] == 1 and body["limit"] == 4 and body["has_more"] is True and len(body["data"]) == 4
    rest = client.get("/api/v1/ai/marketplace/templates?limit=4&page=2").json()
    assert rest["has_more"] is False and len(rest["data"]) == len(marketplace.TEMPLATES) - 4
    en = client.get("/api/v1/ai/marketplace/templates?locale=en&category=support").json()["data"]
    assert [t["slug"] for t in en] == ["customer-support"] and en[0]["locale"] == "en"
    for bad in ("?page=0", "?limit=101", "?locale=de", "?category=x", "?page=a", "?cursor=x"):
        assert_problem(client.get(f"/api/v1/ai/marketplace/templates{bad}"), 422)


def test_at_least_six_templates_in_ru_and_en():
    assert len(marketplace.TEMPLATES) >= 6
    for template in marketplace.TEMPLATES:
        for locale in ("ru", "en"):
            detail = marketplace.detail(template, locale)
            assert detail["system_prompt"] and detail["greeting"] and detail["quick_phrases"]


def test_template_read_by_slug_with_effective_triggers(client):
    body = client.get("/api/v1/ai/marketplace/templates/customer-support?locale=en").json()
    assert body["escalation_triggers"] == ["charged twice", "delete my account", "legal"]
    assert body["effective_escalation_triggers"][:3] == body["escalation_triggers"]
    assert "operator" in body["effective_escalation_triggers"]
    assert_problem(client.get("/api/v1/ai/marketplace/templates/nope"), 404)
    assert_problem(client.get("/api/v1/ai/marketplace/templates/customer-support?locale=xx"), 422)


def test_apply_adds_a_new_assistant_each_time_5_per_hour(client, widget):
    existing = AssistantFactory(widget=widget, is_default=True)
    for n in range(5):
        r = client.post("/api/v1/ai/marketplace/templates/online-school/apply?locale=en", **idem())
        assert r.status_code == 201, r.content
        body = r.json()
        assert body["name"] == "Online school advisor" and body["is_default"] is False
        assert "refund" in body["escalation_triggers"]
    assert Assistant.objects.filter(widget=widget).count() == 6
    existing.refresh_from_db()
    assert existing.is_default is True
    r = client.post("/api/v1/ai/marketplace/templates/online-school/apply", **idem())
    assert_problem(r, 429)
    assert "Retry-After" in r


def test_apply_unknown_slug_body_and_scope(client, api):
    assert_problem(client.post("/api/v1/ai/marketplace/templates/nope/apply", **idem()), 404)
    assert_problem(
        client.post("/api/v1/ai/marketplace/templates/online-school/apply", {"a": 1}, format="json", **idem()), 422
    )
    assert_problem(api(["ai:read"]).post("/api/v1/ai/marketplace/templates/online-school/apply", **idem()), 403)
    assert_problem(client.post("/api/v1/ai/marketplace/templates/online-school/apply"), 400)
    assert not Assistant.objects.exists()


# --- integration binding -----------------------------------------------------------------------------------


def test_integration_bind_read_and_rotate(client, widget):
    assert client.get("/api/v1/ai/assistant/integration").json() == {"data": None}
    CredentialFactory(widget=widget, provider="openai")
    r = client.post("/api/v1/ai/assistant/integration", {"provider": "openai"}, format="json", **idem())
    assert r.status_code == 201, r.content
    data = r.json()["data"]
    secret = data["signing_secret"]
    assert len(secret) == 48 and secret.isalnum()
    assert data["turn_endpoint"].endswith("/api/v1/ai/assistant/turn") and data["turn_endpoint"].startswith("http")
    token = ApiToken.objects.get(pk=data["api_token_id"])
    assert token.widget == widget
    read = client.get("/api/v1/ai/assistant/integration")
    assert secret.encode() not in read.content
    assert read.json()["data"]["has_secret"] is True
    assert selectors.get_signing_binding(widget) == (token.pk, secret)
    assert_problem(
        client.post("/api/v1/ai/assistant/integration", {"provider": "openai"}, format="json", **idem()),
        409,
        "integration_exists",
    )
    assert client.delete("/api/v1/ai/assistant/integration").status_code == 204
    assert selectors.get_signing_binding(widget) is None
    again = client.post("/api/v1/ai/assistant/integration", {"provider": "openai"}, format="json", **idem())
    assert again.json()["data"]["signing_secret"] != secret
    assert client.delete("/api/v1/ai/assistant/integration").status_code == 204
    assert_problem(client.delete("/api/v1/ai/assistant/integration"), 404)


def test_integration_needs_an_active_unowned_credential(client, widget):
    a = AssistantFactory(widget=widget)
    CredentialFactory(widget=widget, provider="openai", assistant=a)
    CredentialFactory(widget=widget, provider="openai", is_active=False)
    r = client.post("/api/v1/ai/assistant/integration", {"provider": "openai"}, format="json", **idem())
    assert_problem(r, 409, "credential_unavailable")
    r = client.post(
        "/api/v1/ai/assistant/integration", {"provider": "openai", "assistant_id": a.pk}, format="json", **idem()
    )
    assert r.status_code == 201
    assert r.json()["data"]["assistant_id"] == a.pk


def test_integration_token_must_also_hold_ai_write(api, widget):
    CredentialFactory(widget=widget)
    client = api(["ai:credentials:write", "ai:read"])
    r = client.post("/api/v1/ai/assistant/integration", {"provider": "openai"}, format="json", **idem())
    assert_problem(r, 403, "missing_scope")
    assert not IntegrationBinding.objects.exists()
    assert_problem(
        api(["ai:write"]).post("/api/v1/ai/assistant/integration", {"provider": "openai"}, format="json", **idem()), 403
    )
    assert_problem(api(["ai:write"]).delete("/api/v1/ai/assistant/integration"), 403)


def test_integration_bad_input(client, widget, other_widget):
    CredentialFactory(widget=widget)
    foreign = AssistantFactory(widget=other_widget)
    for body in (
        {},
        {"provider": "x"},
        {"provider": "openai", "assistant_id": foreign.pk},
        {"provider": "openai", "z": 1},
    ):
        assert_problem(client.post("/api/v1/ai/assistant/integration", body, format="json", **idem()), 422)
    assert_problem(
        client.post("/api/v1/ai/assistant/integration", "provider=openai", content_type="text/plain", **idem()), 415
    )
    assert not IntegrationBinding.objects.exists()


def test_a_revoked_bound_token_signs_nothing(api, widget, make_token):
    CredentialFactory(widget=widget)
    client = api(AI_ALL)
    r = client.post("/api/v1/ai/assistant/integration", {"provider": "openai"}, format="json", **idem())
    token = ApiToken.objects.get(pk=r.json()["data"]["api_token_id"])
    token.revoked_at = timezone.now()
    token.save()
    assert selectors.get_signing_binding(widget) is None


def test_every_category_the_hand_overs_record_is_in_the_schema_enum(client, widget):
    from drf_spectacular.generators import SchemaGenerator

    from apps.learning import demand

    recorded = set(demand.CATEGORIES.values()) | {demand.SAFETY, demand.ESCALATION}
    doc = SchemaGenerator().get_schema(request=None, public=True)
    enum = set(doc["components"]["schemas"]["AiDemandCategoryEnum"]["enum"])
    assert recorded <= enum
    for category in sorted(recorded):
        DemandSignalFactory(widget=widget, category=category)
        assert client.get(f"/api/v1/ai/demand-signals?category={category}").status_code == 200


def test_apply_takes_an_empty_json_object_as_no_body(client, widget):
    r = client.post("/api/v1/ai/marketplace/templates/online-school/apply", {}, format="json", **idem())
    assert r.status_code == 201, r.content
    assert Assistant.objects.filter(widget=widget).count() == 1
