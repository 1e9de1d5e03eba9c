"""AI settings, legacy migration and phrases."""

import pytest

from apps.ai import phrases
from apps.ai.models import AiSettings, Assistant
from apps.ai.tests.conftest import AI_SETUP, idem
from apps.ai.tests.factories import AssistantFactory
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db


# --- settings ----------------------------------------------------------------------------------------------


def test_settings_read_defaults_and_derived_members(client, widget):
    body = client.get("/api/v1/ai/settings").json()
    assert body == {
        "enabled": False,
        "rag_enabled": False,
        "shadow_mode": False,
        "autonomous_tuning_enabled": False,
        "presence_context_enabled": True,
        "takeover_timeout_sec": 300,
        "handover_summary": True,
        "offline_outcome_mode": "handover_offline",
        "effective_assistant": None,
        "legacy_persona": None,
        "learning_target": None,
    }
    assert not AiSettings.objects.filter(widget=widget).exists()  # reads write nothing


def test_settings_effective_assistant_and_learning_target(client, widget):
    AssistantFactory(widget=widget, name="Old")
    default = AssistantFactory(widget=widget, name="Main", is_default=True)
    other = AssistantFactory(widget=widget, name="Other")
    body = client.get("/api/v1/ai/settings").json()
    assert body["effective_assistant"] == {"id": default.pk, "name": "Main"}
    assert body["learning_target"] == {"assistant_id": default.pk, "name": "Main"}
    body = client.get(f"/api/v1/ai/settings?assistant_id={other.pk}").json()
    assert body["learning_target"] == {"assistant_id": other.pk, "name": "Other"}


def test_settings_foreign_assistant_id_is_422(client, other_widget):
    foreign = AssistantFactory(widget=other_widget)
    assert_problem(client.get(f"/api/v1/ai/settings?assistant_id={foreign.pk}"), 422)
    assert_problem(client.get("/api/v1/ai/settings?assistant_id=x"), 422)
    assert_problem(client.get("/api/v1/ai/settings?unknown=1"), 422)


def test_settings_patch_is_merge_safe(client, widget):
    r = client.patch("/api/v1/ai/settings", {"enabled": True}, format="json", **idem())
    assert r.status_code == 200 and r.json()["enabled"] is True
    r = client.patch("/api/v1/ai/settings", {"presence_context_enabled": False}, format="json", **idem())
    body = r.json()
    assert body["enabled"] is True and body["presence_context_enabled"] is False
    assert body["offline_outcome_mode"] == "handover_unknown"


def test_handover_summary_is_read_and_written_with_the_other_settings(client, widget):
    r = client.patch("/api/v1/ai/settings", {"handover_summary": False}, format="json", **idem())
    assert r.status_code == 200 and r.json()["handover_summary"] is False
    assert AiSettings.objects.get(widget=widget).handover_summary is False
    assert client.get("/api/v1/ai/settings").json()["handover_summary"] is False


@pytest.mark.parametrize(
    "body",
    [
        {"enabled": "true"},
        {"enabled": 1},
        {"takeover_timeout_sec": 5},
        {"takeover_timeout_sec": "60"},
        {"handover_summary": "false"},
        {"offline_outcome_mode": "x"},
        {"effective_assistant": None},
        {"nope": 1},
        [],
    ],
)
def test_settings_patch_refuses_bad_input(client, widget, body):
    assert_problem(client.patch("/api/v1/ai/settings", body, format="json", **idem()), 422)
    assert not AiSettings.objects.filter(widget=widget).exists()


def test_settings_auth_scope_media_type_and_idempotency(api, client):
    from rest_framework.test import APIClient

    assert_problem(APIClient().get("/api/v1/ai/settings"), 401)
    assert_problem(api(["ai:write"]).get("/api/v1/ai/settings"), 403, "missing_scope")
    assert_problem(api(["ai:read"]).patch("/api/v1/ai/settings", {}, format="json", **idem()), 403, "missing_scope")
    assert_problem(client.patch("/api/v1/ai/settings", {"enabled": True}, format="json"), 400)
    assert_problem(
        client.patch("/api/v1/ai/settings", "enabled=1", content_type="application/x-www-form-urlencoded", **idem()),
        415,
    )
    key = idem()
    assert client.patch("/api/v1/ai/settings", {"enabled": True}, format="json", **key).status_code == 200
    assert_problem(client.patch("/api/v1/ai/settings", {"enabled": True}, format="json", **key), 409)


def test_ai_setup_preset_configures_without_credentials(api):
    client = api(AI_SETUP)
    assert client.patch("/api/v1/ai/settings", {"enabled": True}, format="json", **idem()).status_code == 200
    r = client.post("/api/v1/ai/credentials", {"provider": "openai", "api_key": "k"}, format="json", **idem())
    assert_problem(r, 403, "missing_scope")


# --- migrate -----------------------------------------------------------------------------------------------


def test_migrate_seeds_an_assistant_additively_and_repeatably(client, widget):
    AiSettings.objects.create(widget=widget, legacy_persona="Friendly", legacy_greeting="Hi")
    first = client.post("/api/v1/ai/settings/migrate", **idem())
    assert first.status_code == 200, first.content
    body = first.json()
    assert body["created"] is True
    assert body["assistant"]["persona"] == "Friendly" and body["assistant"]["is_default"] is True
    again = client.post("/api/v1/ai/settings/migrate", **idem()).json()
    assert again["created"] is False and again["assistant"]["id"] == body["assistant"]["id"]
    assert Assistant.objects.filter(widget=widget).count() == 1
    assert client.get("/api/v1/ai/settings").json()["legacy_persona"] == "Friendly"


def test_migrate_without_legacy_settings_is_409(client, widget):
    assert_problem(client.post("/api/v1/ai/settings/migrate", **idem()), 409, "nothing_to_migrate")


def test_migrate_refuses_a_body(client, widget):
    AiSettings.objects.create(widget=widget, legacy_persona="P")
    assert_problem(client.post("/api/v1/ai/settings/migrate", {"x": 1}, format="json", **idem()), 422)
    assert not Assistant.objects.exists()


# --- phrases -----------------------------------------------------------------------------------------------


def test_phrases_read_every_key_and_language_with_defaults(client):
    body = client.get("/api/v1/ai/messages").json()
    assert set(body) == set(phrases.KEYS)
    for key in phrases.KEYS:
        assert set(body[key]) == set(phrases.LANGUAGES)
        for lang in phrases.LANGUAGES:
            item = body[key][lang]
            assert item["source"] == "default" and item["text"] == item["default"] and item["text"]


def test_phrases_patch_merges_strips_and_resets(client):
    r = client.patch(
        "/api/v1/ai/messages",
        {"handover_offline": {"ru": "<b>Нет</b> никого\x07", "en": "Nobody"}, "social_reply": {"de": "Bitte"}},
        format="json",
        **idem(),
    )
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["handover_offline"]["ru"] == {
        "text": "Нет никого",
        "source": "override",
        "default": phrases.DEFAULTS["handover_offline"]["ru"],
    }
    r = client.patch("/api/v1/ai/messages", {"handover_offline": {"en": None}}, format="json", **idem())
    body = r.json()
    assert body["handover_offline"]["en"]["source"] == "default"
    assert body["handover_offline"]["ru"]["source"] == "override"
    assert body["social_reply"]["de"]["text"] == "Bitte"
    body = client.patch("/api/v1/ai/messages", {"handover_offline": None}, format="json", **idem()).json()
    assert body["handover_offline"]["ru"]["source"] == "default"
    assert body["social_reply"]["de"]["source"] == "override"


def test_phrases_put_replaces_the_whole_set(client):
    client.patch("/api/v1/ai/messages", {"social_reply": {"de": "Bitte"}}, format="json", **idem())
    body = client.put("/api/v1/ai/messages", {"handoff_to_ai": {"en": "Back"}}, format="json", **idem()).json()
    assert body["social_reply"]["de"]["source"] == "default"
    assert body["handoff_to_ai"]["en"]["text"] == "Back"
    body = client.put("/api/v1/ai/messages", {}, format="json", **idem()).json()
    assert all(body[k][lang]["source"] == "default" for k in phrases.KEYS for lang in phrases.LANGUAGES)


@pytest.mark.parametrize(
    "body",
    [
        {"social_reply": {"en": "<i></i>"}},
        {"social_reply": {"en": "  \x01 "}},
        {"social_reply": {"en": "x" * 501}},
        {"social_reply": {"fr": "Merci"}},
        {"social_reply": {"en": 5}},
        {"social_reply": "thanks"},
        {"unknown_key": {"en": "x"}},
    ],
)
def test_phrases_refuse_bad_values_and_change_nothing(client, widget, body):
    client.patch("/api/v1/ai/messages", {"social_reply": {"ru": "Пожалуйста"}}, format="json", **idem())
    assert_problem(client.patch("/api/v1/ai/messages", body, format="json", **idem()), 422)
    assert_problem(client.put("/api/v1/ai/messages", body, format="json", **idem()), 422)
    assert AiSettings.objects.get(widget=widget).phrases == {"social_reply": {"ru": "Пожалуйста"}}


def test_phrases_scopes(api):
    assert_problem(api(["ai:write"]).get("/api/v1/ai/messages"), 403)
    assert_problem(api(["ai:read"]).put("/api/v1/ai/messages", {}, format="json", **idem()), 403)


def test_migrate_takes_an_empty_json_object_as_no_body(client, widget):
    AiSettings.objects.create(widget=widget, legacy_persona="Friendly", legacy_greeting="Hi")
    assert_problem(client.post("/api/v1/ai/settings/migrate", {"a": 1}, format="json", **idem()), 422)
    r = client.post("/api/v1/ai/settings/migrate", {}, format="json", **idem())
    assert r.status_code == 200, r.content
    assert r.json()["created"] is True
