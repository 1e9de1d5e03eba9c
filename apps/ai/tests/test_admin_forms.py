"""The assistant and AI settings forms in Django admin apply the API's rules (AssistantInput,
SettingsPatchInput, PhrasesInput and the phrases' cleaning): a value the API refuses is a form error
and changes nothing; an accepted change is saved through the API's services (the audit row, the
widget's config event)."""

import json

import pytest

from apps.ai.models import AiSettings, Assistant
from apps.audit.models import AuditEntry
from apps.core import events
from tests.support.admin import staff_client

from .factories import AssistantFactory

pytestmark = pytest.mark.django_db

PERMS = ("view_assistant", "change_assistant", "add_assistant", "view_aisettings", "change_aisettings")


@pytest.fixture
def emitted(monkeypatch) -> list:
    """The event types emitted (the widget's config event is handled in-process, never outboxed)."""
    seen = []
    original = events.emit
    monkeypatch.setattr(events, "emit", lambda w, t, **kw: (seen.append(t), original(w, t, **kw))[1])
    return seen


def staff(widget):
    return staff_client("ai", *PERMS, account_of=widget)


def assistant_form(**overrides) -> dict:
    body = {
        "name": "Helper",
        "enabled": "on",
        "persona": "",
        "system_prompt": "Be brief.",
        "temperature": "0.7",
        "escalation_triggers": "[]",
        "greeting": "",
        "quick_phrases": "[]",
        "greeting_i18n": "{}",
        "quick_phrases_i18n": "{}",
        "provider": "openai",
        "model": "",
    }
    body.update(overrides)
    return {name: value for name, value in body.items() if value is not None}


def form_errors(response) -> dict:
    assert response.status_code == 200, response.get("Location")
    return response.context["adminform"].form.errors


# --- assistants --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("temperature", "5"),
        ("temperature", "-0.1"),
        ("persona", "p" * 4001),
        ("system_prompt", "s" * 20001),
        ("greeting", "g" * 1001),
        ("escalation_triggers", json.dumps([f"t{i}" for i in range(51)])),
        ("escalation_triggers", '{"not": "a list"}'),
        ("escalation_triggers", '["  "]'),
        ("quick_phrases", json.dumps([f"q{i}" for i in range(21)])),
        ("greeting_i18n", '{"xx": "hi"}'),
        ("provider", "acme"),
    ],
)
def test_an_assistant_change_the_api_refuses_is_a_form_error(widget, field, value):
    mine = AssistantFactory(widget=widget, temperature=0.7, system_prompt="Be brief.")
    response = staff(widget).post(f"/admin/ai/assistant/{mine.pk}/change/", assistant_form(**{field: value}))
    assert field in form_errors(response)
    stored = Assistant.objects.get(pk=mine.pk)
    assert (stored.temperature, stored.system_prompt, stored.provider) == (0.7, "Be brief.", mine.provider)


def test_an_assistant_the_api_refuses_is_not_added(widget):
    response = staff(widget).post("/admin/ai/assistant/add/", assistant_form(widget=widget.pk, temperature="2.5"))
    assert "temperature" in form_errors(response)
    assert not Assistant.objects.exists()


def test_an_assistant_change_goes_through_the_service(widget, emitted):
    old_default = AssistantFactory(widget=widget, is_default=True)
    mine = AssistantFactory(widget=widget, is_default=False)
    response = staff(widget).post(
        f"/admin/ai/assistant/{mine.pk}/change/",
        assistant_form(is_default="on", temperature="2", escalation_triggers='["  human please "]', provider=""),
    )
    assert response.status_code == 302
    mine.refresh_from_db()
    old_default.refresh_from_db()
    assert (mine.is_default, old_default.is_default) == (True, False)  # the service clears the others
    assert (mine.temperature, mine.escalation_triggers, mine.provider) == (2.0, ["human please"], "")
    assert events.WIDGET_CONFIG_CHANGED in emitted


def test_an_assistant_is_added_through_the_service(widget, emitted):
    response = staff(widget).post("/admin/ai/assistant/add/", assistant_form(widget=widget.pk, name="  Helper  "))
    assert response.status_code == 302
    assert Assistant.objects.get(widget=widget).name == "Helper"
    assert events.WIDGET_CONFIG_CHANGED in emitted


# --- AI settings --------------------------------------------------------------------------------------------


def settings_form(**overrides) -> dict:
    body = {
        "enabled": None,
        "rag_enabled": None,
        "presence_context_enabled": "on",
        "takeover_timeout_sec": "300",
        "handover_summary": "on",
        "legacy_persona": "",
        "legacy_system_prompt": "",
        "legacy_greeting": "",
        "phrases": "{}",
    }
    body.update(overrides)
    return {name: value for name, value in body.items() if value is not None}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("takeover_timeout_sec", "5"),
        ("takeover_timeout_sec", "86401"),
        ("legacy_persona", "p" * 4001),
        ("legacy_greeting", "g" * 1001),
        ("phrases", '{"no_such_phrase": {"en": "hi"}}'),
        ("phrases", '{"handover_notice": {"xx": "hi"}}'),
        ("phrases", json.dumps({"handover_notice": {"en": "x" * 501}})),
        ("phrases", '{"handover_notice": {"en": "<b></b>"}}'),
        ("phrases", '["not", "an", "object"]'),
    ],
)
def test_an_ai_settings_change_the_api_refuses_is_a_form_error(widget, field, value):
    row = AiSettings.objects.create(widget=widget, phrases={"handover_notice": {"en": "One moment."}})
    response = staff(widget).post(
        f"/admin/ai/aisettings/{row.pk}/change/", settings_form(enabled="on", **{field: value})
    )
    assert field in form_errors(response)
    row.refresh_from_db()
    assert (row.enabled, row.takeover_timeout_sec, row.legacy_persona) == (False, 300, "")
    assert row.phrases == {"handover_notice": {"en": "One moment."}}


def test_an_ai_settings_change_goes_through_the_service(widget, emitted):
    row = AiSettings.objects.create(widget=widget)
    response = staff(widget).post(
        f"/admin/ai/aisettings/{row.pk}/change/",
        settings_form(enabled="on", takeover_timeout_sec="60", phrases='{"handover_notice": {"en": "<i>Wait</i>"}}'),
    )
    assert response.status_code == 302
    row.refresh_from_db()
    assert (row.enabled, row.takeover_timeout_sec) == (True, 60)
    assert row.enabled_at is not None  # set by the service when the AI is switched on
    assert row.phrases == {"handover_notice": {"en": "Wait"}}  # tags stripped, as PUT /v1/ai/messages
    entry = AuditEntry.objects.get(widget=widget, action="ai_settings.changed")
    assert entry.actor_type == "staff"
    assert events.WIDGET_CONFIG_CHANGED in emitted


@pytest.mark.parametrize("page", ["assistant/add/", "aisettings/add/"])
def test_the_add_pages_render(widget, page):
    client = staff_client("ai", *PERMS, "add_aisettings", account_of=widget)
    assert client.get(f"/admin/ai/{page}").status_code == 200


def test_ai_settings_are_added_through_the_service(widget):
    client = staff_client("ai", *PERMS, "add_aisettings", account_of=widget)
    response = client.post("/admin/ai/aisettings/add/", settings_form(widget=widget.pk, takeover_timeout_sec="45"))
    assert response.status_code == 302
    assert AiSettings.objects.get(widget=widget).takeover_timeout_sec == 45


# --- deleting assistants --------------------------------------------------------------------------------------


def test_an_assistant_an_ai_operator_runs_is_not_deleted(widget):
    from apps.ai import services

    mine = AssistantFactory(widget=widget)
    services.create_operator(widget=widget, assistant=mine, name="Ava")
    client = staff_client("ai", *PERMS, "delete_assistant", account_of=widget)
    page = client.get(f"/admin/ai/assistant/{mine.pk}/delete/")
    assert "Ava" in page.content.decode()
    client.post(f"/admin/ai/assistant/{mine.pk}/delete/", {"post": "yes"})
    client.post("/admin/ai/assistant/", {"action": "delete_selected", "_selected_action": [mine.pk], "post": "yes"})
    assert Assistant.objects.filter(pk=mine.pk).exists()


def test_an_assistant_only_retired_operators_ran_is_deleted_through_the_service(widget, emitted):
    from apps.ai import services

    mine = AssistantFactory(widget=widget)
    services.create_operator(widget=widget, assistant=mine, name="Ava", status="retired")
    client = staff_client("ai", *PERMS, "delete_assistant", account_of=widget)
    assert client.post(f"/admin/ai/assistant/{mine.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not Assistant.objects.filter(pk=mine.pk).exists()
    assert events.WIDGET_CONFIG_CHANGED in emitted


@pytest.mark.parametrize("bulk", [False, True])
def test_deleting_ai_settings_emits_the_widgets_config_event(widget, emitted, bulk):
    # The served config's answerers follow the AI settings: a deletion purges them as a PATCH does.
    row = AiSettings.objects.create(widget=widget, enabled=True)
    client = staff_client("ai", *PERMS, "delete_aisettings", account_of=widget)
    if bulk:
        body = {"action": "delete_selected", "_selected_action": [row.pk], "post": "yes"}
        response = client.post("/admin/ai/aisettings/", body)
    else:
        response = client.post(f"/admin/ai/aisettings/{row.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302 and not AiSettings.objects.exists()
    assert events.WIDGET_CONFIG_CHANGED in emitted
    assert AuditEntry.objects.get(widget=widget, action="ai_settings.deleted").actor_type == "staff"
