"""Widget text translations: the status resource, regeneration (budget, fail-closed, key release),
the job through the widget-wide credential, and the served config's resolution order."""

import pytest

from apps.ai import translations
from apps.ai.tests.conftest import idem
from apps.ai.tests.factories import CredentialFactory
from apps.core.models import IdempotencyKey
from apps.widget import selectors as widget_selectors
from apps.widget import services as widget_services
from apps.widget.models import TextTranslation
from tests.llm_fake import server_error
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db
REGEN = "/api/v1/widget/translations/regenerate"


@pytest.fixture
def texts(widget):
    widget_services.update_settings(
        widget=widget,
        body={
            "widget_name": "Поддержка",
            "widget_greeting": "Здравствуйте!",
            "widget_content_source_language": "ru",
            "widget_supported_languages": ["ru", "en", "de"],
            "widget_auto_translate_custom_texts": True,
        },
    )
    return widget


@pytest.fixture
def fake_credential(widget, llm_fake):
    fake = llm_fake("openai", text="Support")
    CredentialFactory(widget=widget, api_key=fake.api_key, base_url=fake.base_url)
    return fake


def regen(client, body, **headers):
    return client.post(REGEN, body, format="json", **(headers or idem()))


def test_status_reports_credential_missing_and_counts(client, texts):
    data = client.get("/api/v1/widget/translations").json()["data"]
    status = data["status"]
    assert status["available"] is True and status["enabled"] is True and status["reason"] == "credential_missing"
    assert status["total"] == 4 and status["counts"] == {"ready": 0, "stale": 4, "pending": 0, "failed": 0}
    assert {(i["locale"], i["field"]) for i in data["items"]} == {
        ("en", "widget_name"),
        ("en", "widget_greeting"),
        ("de", "widget_name"),
        ("de", "widget_greeting"),
    }
    settings_status = client.get("/api/v1/widget/settings").json()["data"]["widget_translation_status"]
    assert settings_status == status


def test_regenerate_translates_through_the_credential_and_serves_the_text(
    client, texts, fake_credential, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        r = regen(client, {"fields": ["widget_name"], "locales": ["en", "de"]})
    assert r.status_code == 202, r.content
    assert r.json()["data"]["accepted"] == 2
    data = client.get("/api/v1/widget/translations").json()["data"]
    assert data["status"]["counts"]["ready"] == 2 and data["status"]["reason"] is None
    assert b"Support" not in client.get("/api/v1/widget/translations").content  # redacted
    sent = fake_credential.api_requests[-1].json()["messages"]
    assert sent[-1]["content"] == "Поддержка" and "German" in sent[0]["content"]
    config = widget_selectors.public_config(widget=texts)
    assert config["texts"]["en"]["widget_name"] == "Support"
    assert config["texts"]["ru"]["widget_name"] == "Поддержка"
    assert config["texts"]["en"]["widget_greeting"] == "Здравствуйте!"  # not translated: the source


def test_manual_override_wins_and_a_changed_source_is_not_served(
    client, texts, fake_credential, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        regen(client, {"fields": ["widget_name"], "locales": ["en"]})
    widget_services.update_settings(widget=texts, body={"widget_text_translations": {"en": {"widget_name": "Help"}}})
    assert widget_selectors.public_config(widget=texts)["texts"]["en"]["widget_name"] == "Help"
    widget_services.update_settings(widget=texts, body={"widget_text_translations": {}, "widget_name": "Помощь"})
    assert widget_selectors.public_config(widget=texts)["texts"]["en"]["widget_name"] == "Помощь"
    counts = client.get("/api/v1/widget/translations").json()["data"]["status"]["counts"]
    assert counts["stale"] >= 1


def test_last_validated_text_stays_while_pending_and_after_failure(
    client, texts, fake_credential, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        regen(client, {"fields": ["widget_name"], "locales": ["en"]})
    with django_capture_on_commit_callbacks(execute=False):
        regen(client, {"fields": ["widget_name"], "locales": ["en"]})
    assert TextTranslation.objects.get(locale="en", field="widget_name").status == "pending"
    assert widget_selectors.public_config(widget=texts)["texts"]["en"]["widget_name"] == "Support"
    fake_credential.script(*[server_error(500)] * 6)
    with django_capture_on_commit_callbacks(execute=True):
        regen(client, {"fields": ["widget_name"], "locales": ["en"]})
    row = TextTranslation.objects.get(locale="en", field="widget_name")
    assert row.status == "failed" and row.error == "provider_server_error"
    assert widget_selectors.public_config(widget=texts)["texts"]["en"]["widget_name"] == "Support"
    assert client.get("/api/v1/widget/translations").json()["data"]["status"]["counts"]["failed"] == 1


def test_budget_42_jobs_per_hour_reserved_whole_and_the_key_released(client, texts, fake_credential):
    for _ in range(10):  # 4 jobs each: 40
        assert regen(client, {"fields": ["widget_name", "widget_greeting"], "locales": ["en", "de"]}).status_code == 202
    r = regen(
        client,
        {"fields": ["widget_name", "widget_greeting"], "locales": ["en", "de"]},
        HTTP_X_SERVICE_IDEMPOTENCY_KEY="over",
    )
    assert_problem(r, 429, "widget_translation_rate_limited")
    assert int(r["Retry-After"]) >= 1
    assert not IdempotencyKey.objects.filter(key="over").exists()
    assert regen(client, {"fields": ["widget_name"], "locales": ["en", "de"]}).status_code == 202  # 42 fit whole
    assert_problem(regen(client, {"fields": ["widget_name"], "locales": ["en"]}), 429)


def test_budget_store_down_fails_closed(client, texts, fake_credential, monkeypatch):
    def down(*a, **k):
        raise ConnectionError("budget store down")

    monkeypatch.setattr(translations.JOB_BUDGET.__class__, "consume", down)
    r = regen(client, {"fields": ["widget_name"], "locales": ["en"]}, HTTP_X_SERVICE_IDEMPOTENCY_KEY="down")
    assert_problem(r, 503, "widget_translation_budget_unavailable")
    assert not IdempotencyKey.objects.filter(key="down").exists()
    assert not TextTranslation.objects.exists()


def test_translation_store_down_is_503(client, texts, fake_credential, monkeypatch):
    from django.db import DatabaseError

    from apps.widget.models import TextTranslation as Model

    def broken(*a, **k):
        raise DatabaseError("no table")

    monkeypatch.setattr(Model.objects, "select_for_update", broken)
    r = regen(client, {"fields": ["widget_name"], "locales": ["en"]}, HTTP_X_SERVICE_IDEMPOTENCY_KEY="store")
    assert_problem(r, 503, "widget_translation_store_unavailable")
    assert not IdempotencyKey.objects.filter(key="store").exists()


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"fields": [], "locales": ["en"]},
        {"fields": ["widget_name"], "locales": []},
        {"fields": ["widget_title"], "locales": ["en"]},
        {"fields": ["widget_name"], "locales": ["fr"]},
        {"fields": ["widget_name"], "locales": ["es"]},
        {"fields": ["widget_name"], "locales": ["ru"]},
        {"fields": ["widget_signature"], "locales": ["en"]},
        {"fields": ["widget_name", "widget_name"], "locales": ["en"]},
        {"fields": "widget_name", "locales": ["en"]},
        {"fields": ["widget_name"], "locales": ["en"], "force": True},
    ],
)
def test_regenerate_input_rules_release_the_key(client, texts, fake_credential, body):
    r = regen(client, body, HTTP_X_SERVICE_IDEMPOTENCY_KEY="bad-input")
    assert_problem(r, 422)
    assert not IdempotencyKey.objects.filter(key="bad-input").exists()
    assert not TextTranslation.objects.exists()


def test_regenerate_without_a_credential_is_409(client, texts):
    assert_problem(regen(client, {"fields": ["widget_name"], "locales": ["en"]}), 409, "credential_unavailable")


def test_translations_scopes_and_media_type(api, client, texts):
    assert_problem(api(["widget:write"]).get("/api/v1/widget/translations"), 403)
    assert_problem(api(["widget:read"]).post(REGEN, {}, format="json", **idem()), 403)
    assert_problem(client.post(REGEN, "fields=x", content_type="text/plain", **idem()), 415)
    assert_problem(client.post(REGEN, {"fields": ["widget_name"], "locales": ["en"]}, format="json"), 400)
