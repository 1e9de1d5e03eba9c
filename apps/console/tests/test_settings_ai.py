"""The owner's AI pages: the AI operator's settings, AI operators, assistants (and the detached test),
provider credentials (and their live test against a loopback fake), learning proposals."""

import ipaddress
import json
import re
from html import unescape

import pytest
from django.urls import reverse

from apps.agents.models import Agent
from apps.ai.models import AiSettings, Assistant, Credential
from apps.ai.tests.factories import AiOperatorFactory, AssistantFactory, CredentialFactory
from apps.audit.models import AuditEntry
from apps.learning.models import Wish
from tests.llm_fake import llm_fake, unauthorized  # noqa: F401 (the fixture)

pytestmark = pytest.mark.django_db

SECRET = "sk-owner-secret-never-shown-4242"
AI_ALL = ["ai:read", "ai:write", "ai:apply", "ai:credentials:write"]


def url(name, *args):
    return reverse(f"console:settings:{name}", args=args)


def idem(n=[0]):  # noqa: B006 - a counter across the module
    n[0] += 1
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"console-ai-{n[0]}"}


def page_text(response) -> str:
    return unescape(response.content.decode())


def api_errors(response) -> dict:
    body = json.loads(response.content)
    return body.get("errors") or {}


def shown(response, messages) -> None:
    """Each of the API's messages is on the page."""
    text = page_text(response)
    for message in messages:
        assert message in text, (message, re.sub(r"\s+", " ", text)[-3000:])


def owner_actor(owner) -> dict:
    return {"actor_type": AuditEntry.ActorType.AGENT, "actor_id": str(owner.pk)}


@pytest.fixture
def assistant(widget):
    return AssistantFactory(widget=widget, name="Tea helper", is_default=True, system_prompt="Sell tea.")


@pytest.fixture
def foreign(other_widget):
    assistant = AssistantFactory(widget=other_widget, name="Foreign")
    return {
        "assistant": assistant,
        "operator": AiOperatorFactory(assistant=assistant),
        "credential": CredentialFactory(widget=other_widget),
        "wish": Wish.objects.create(widget=other_widget, assistant=assistant, text="x", status=Wish.Status.PROPOSED),
    }


# --- pages ------------------------------------------------------------------------------------------------


def test_every_page_renders_for_the_owner(owner_console, widget, assistant):
    operator = AiOperatorFactory(assistant=assistant, name="Tea bot")
    credential = CredentialFactory(widget=widget, model="gpt-4o-mini")
    for name, args in (
        ("ai", ()),
        ("ai-assistant-new", ()),
        ("ai-assistant", (assistant.pk,)),
        ("ai-operator", (operator.pk,)),
        ("ai-credential-new", ()),
        ("ai-credential", (credential.pk,)),
        ("ai-learning", ()),
    ):
        response = owner_console.get(url(name, *args))
        assert response.status_code == 200, name
    text = page_text(owner_console.get(url("ai")))
    assert "Tea bot" in text and "Tea helper" in text and "gpt-4o-mini" in text
    assert "Not answering visitors" in text


def test_the_menu_lists_the_area(owner_console):
    assert url("ai") in owner_console.get(reverse("console:settings:index")).content.decode()


# --- settings ---------------------------------------------------------------------------------------------


def test_settings_are_saved_with_the_owner_as_actor(owner_console, owner, widget):
    response = owner_console.post(
        url("ai-settings"), {"enabled": "on", "shadow_mode": "on", "takeover_timeout_sec": "120"}
    )
    assert response.status_code == 302
    row = AiSettings.objects.get(widget=widget)
    assert (row.enabled, row.shadow_mode, row.takeover_timeout_sec) == (True, True, 120)
    assert AuditEntry.objects.filter(widget=widget, target_type="ai_settings", **owner_actor(owner)).exists()


def test_a_refused_setting_shows_the_api_message_and_changes_nothing(owner_console, widget, api):
    api_response = api(AI_ALL).patch("/api/v1/ai/settings", {"takeover_timeout_sec": 5}, format="json", **idem())
    assert api_response.status_code == 422
    response = owner_console.post(url("ai-settings"), {"enabled": "on", "takeover_timeout_sec": "5"})
    assert response.status_code == 422
    shown(response, api_errors(api_response)["takeover_timeout_sec"])
    assert not AiSettings.objects.filter(widget=widget, enabled=True).exists()


# --- AI operators -----------------------------------------------------------------------------------------


def test_an_ai_operator_is_created_and_edited(owner_console, owner, widget, assistant):
    response = owner_console.post(
        url("ai-operator-new"),
        {"name": "Tea bot", "assistant_id": assistant.pk, "status": "active", "show_in_header": "on"},
    )
    assert response.status_code == 302
    operator = Agent.objects.get(widget=widget, type=Agent.Type.AI)
    assert (operator.name, operator.ai_assistant_id, operator.show_in_header) == ("Tea bot", assistant.pk, True)
    response = owner_console.post(
        url("ai-operator", operator.pk), {"name": "Chai bot", "assistant_id": assistant.pk, "status": "paused"}
    )
    assert response.status_code == 302
    operator.refresh_from_db()
    assert (operator.name, operator.status, operator.show_in_header) == ("Chai bot", Agent.Status.RELAXATION, False)
    assert AuditEntry.objects.filter(widget=widget, target_type="ai_operator", **owner_actor(owner)).count() == 2


def test_an_operator_on_a_foreign_assistant_is_refused_as_the_api_refuses(
    owner_console, widget, assistant, foreign, api
):
    body = {"assistant_id": foreign["assistant"].pk, "name": "X"}
    api_response = api(AI_ALL).post("/api/v1/ai/operators", body, format="json", **idem())
    assert api_response.status_code == 422
    response = owner_console.post(url("ai-operator-new"), {**body, "status": "active"})
    assert response.status_code == 422
    shown(response, api_errors(api_response)["assistant_id"])
    assert not Agent.objects.filter(widget=widget, type=Agent.Type.AI).exists()


# --- assistants -------------------------------------------------------------------------------------------


def test_an_assistant_is_created_edited_and_deleted(owner_console, owner, widget):
    response = owner_console.post(
        url("ai-assistant-new"),
        {"name": "Helper", "enabled": "on", "system_prompt": "Be kind.", "quick_phrases": "Delivery\nPrices\n"},
    )
    assert response.status_code == 302
    assistant = Assistant.objects.get(widget=widget, name="Helper")
    assert assistant.quick_phrases == ["Delivery", "Prices"] and assistant.enabled
    response = owner_console.post(
        url("ai-assistant", assistant.pk), {"name": "Helper", "is_default": "on", "temperature": "0.5"}
    )
    assert response.status_code == 302
    assistant.refresh_from_db()
    assert assistant.is_default and assistant.temperature == 0.5 and not assistant.enabled
    assert owner_console.post(url("ai-assistant-delete", assistant.pk)).status_code == 302
    assert not Assistant.objects.filter(pk=assistant.pk).exists()
    assert AuditEntry.objects.filter(widget=widget, target_type="assistant", **owner_actor(owner)).count() == 3


def test_a_refused_assistant_shows_the_api_messages(owner_console, widget, api):
    body = {"name": "Hot", "temperature": 3}
    api_response = api(AI_ALL).post("/api/v1/ai/assistants", body, format="json", **idem())
    assert api_response.status_code == 422
    response = owner_console.post(url("ai-assistant-new"), {"name": "Hot", "temperature": "3"})
    assert response.status_code == 422
    shown(response, api_errors(api_response)["temperature"])
    assert not Assistant.objects.filter(widget=widget).exists()


def test_an_assistant_in_use_is_not_deleted(owner_console, widget, assistant, api):
    AiOperatorFactory(assistant=assistant, name="Tea bot")
    api_response = api(AI_ALL).delete(f"/api/v1/ai/assistants/{assistant.pk}")
    assert api_response.status_code == 409
    response = owner_console.post(url("ai-assistant-delete", assistant.pk))
    assert response.status_code == 409
    shown(
        response,
        [json.loads(api_response.content)["detail"], "Retire the AI operators that answer with it first: Tea bot."],
    )
    assert Assistant.objects.filter(pk=assistant.pk).exists()


def test_a_template_makes_a_new_assistant(owner_console, widget):
    response = owner_console.post(url("ai-template-apply"), {"template": "customer-support"})
    assert response.status_code == 302
    assert Assistant.objects.filter(widget=widget).count() == 1


def test_the_detached_test_shows_the_answer(owner_htmx, widget, assistant, llm_fake):  # noqa: F811
    fake = llm_fake("openai", text="We sell green tea.")
    CredentialFactory(widget=widget, api_key=fake.api_key, base_url=fake.base_url)
    AiOperatorFactory(assistant=assistant, name="Tea bot")
    response = owner_htmx.post(
        url("ai-assistant-test", assistant.pk), {"question": "Green tea?", "operators": "online"}
    )
    assert response.status_code == 200
    assert "We sell green tea." in page_text(response)
    assert len([r for r in fake.requests if "chat/completions" in r.path]) == 1


def test_the_detached_test_without_a_credential_says_why(owner_console, assistant, api):
    api_response = api(AI_ALL).post(
        f"/api/v1/ai/assistants/{assistant.pk}/test", {"question": "Hi"}, format="json", **idem()
    )
    assert api_response.status_code == 409
    response = owner_console.post(url("ai-assistant-test", assistant.pk), {"question": "Hi"})
    assert response.status_code == 409
    shown(response, [json.loads(api_response.content)["detail"]])


# --- credentials ------------------------------------------------------------------------------------------


def test_a_credential_is_connected_edited_and_deleted_and_its_key_never_shown(owner_console, owner, widget, llm_fake):  # noqa: F811
    fake = llm_fake("openai_compatible")
    response = owner_console.post(
        url("ai-credential-new"),
        {
            "provider": "openai_compatible",
            "api_key": SECRET,
            "base_url": fake.base_url,
            "model": "m1",
            "is_active": "on",
        },
    )
    assert response.status_code == 302, page_text(response)[-2000:]
    credential = Credential.objects.get(widget=widget)
    assert credential.model == "m1" and credential.base_url == fake.base_url
    for page in (url("ai"), url("ai-credential", credential.pk)):
        assert SECRET not in owner_console.get(page).content.decode()
    response = owner_console.post(
        url("ai-credential", credential.pk), {"base_url": fake.base_url, "model": "m2", "is_active": "on"}
    )
    assert response.status_code == 302
    credential.refresh_from_db()
    assert credential.model == "m2"
    assert owner_console.post(url("ai-credential-delete", credential.pk)).status_code == 302
    assert not Credential.objects.filter(widget=widget).exists()
    actions = set(
        AuditEntry.objects.filter(widget=widget, target_type="ai_credential", **owner_actor(owner)).values_list(
            "action", flat=True
        )
    )
    assert actions == {"ai_credential.created", "ai_credential.changed", "ai_credential.deleted"}


@pytest.mark.parametrize(
    "body",
    [
        {"provider": "openai_compatible", "api_key": SECRET},
        {"provider": "openai", "api_key": SECRET, "base_url": "https://10.0.0.5/v1"},
        {"provider": "openai", "api_key": ""},
    ],
    ids=["no-base-url", "private-address", "blank-key"],
)
def test_a_refused_credential_shows_the_api_messages_and_not_the_key(owner_console, widget, api, body):
    api_response = api(AI_ALL).post("/api/v1/ai/credentials", body, format="json", **idem())
    assert api_response.status_code == 422
    response = owner_console.post(url("ai-credential-new"), {**body, "is_active": "on"})
    assert response.status_code == 422
    for messages in api_errors(api_response).values():
        shown(response, messages)
    assert SECRET not in response.content.decode()
    assert not Credential.objects.filter(widget=widget).exists()


def test_a_new_address_needs_the_key_again(owner_console, widget, api, monkeypatch):
    from apps.platform import outbound

    monkeypatch.setattr(outbound.policy, "resolve_host", lambda host, port: [ipaddress.ip_address("93.184.216.34")])
    credential = CredentialFactory(widget=widget)
    body = {"base_url": "https://api.example.com/v1"}
    api_response = api(AI_ALL).patch(f"/api/v1/ai/credentials/{credential.pk}", body, format="json", **idem())
    assert api_response.status_code == 422
    response = owner_console.post(url("ai-credential", credential.pk), {**body, "is_active": "on"})
    assert response.status_code == 422
    shown(response, api_errors(api_response)["api_key"])
    credential.refresh_from_db()
    assert credential.base_url == ""


def test_the_credential_test_reports_success_then_a_wrong_key(owner_htmx, widget, llm_fake):  # noqa: F811
    fake = llm_fake("openai_compatible")
    credential = CredentialFactory(
        widget=widget, provider="openai_compatible", api_key=fake.api_key, base_url=fake.base_url
    )
    response = owner_htmx.post(url("ai-credential-test", credential.pk))
    assert response.status_code == 200
    assert "It works." in page_text(response) and "2 models" in page_text(response)
    wrong = CredentialFactory(widget=widget, provider="openai", api_key="sk-wrong", base_url=fake.base_url)
    response = owner_htmx.post(url("ai-credential-test", wrong.pk))
    assert response.status_code == 200
    text = page_text(response)
    assert "The test failed." in text and "The provider did not list its models." in text and "401" in text
    assert "sk-wrong" not in text and fake.api_key not in text


def test_the_credential_test_without_script_redirects_with_its_result(owner_console, widget, llm_fake):  # noqa: F811
    fake = llm_fake("openai")
    credential = CredentialFactory(widget=widget, api_key=fake.api_key, base_url=fake.base_url)
    response = owner_console.post(url("ai-credential-test", credential.pk), follow=True)
    assert "The provider answered: the key and the address work." in page_text(response)


# --- learning proposals -----------------------------------------------------------------------------------


def proposed(widget, assistant, **kwargs):
    return Wish.objects.create(
        widget=widget,
        assistant=assistant,
        text="Be warmer",
        status=Wish.Status.PROPOSED,
        base_persona=assistant.persona,
        base_system_prompt=assistant.system_prompt,
        proposed_persona="Warm and brief.",
        proposed_system_prompt=assistant.system_prompt,
        rationale="Visitors asked for warmth.",
        **kwargs,
    )


def test_a_proposal_is_shown_approved_and_reverted(owner_console, widget, assistant):
    wish = proposed(widget, assistant)
    text = page_text(owner_console.get(url("ai-learning")))
    assert "Warm and brief." in text and "Visitors asked for warmth." in text
    response = owner_console.post(url("ai-wish-approve", wish.pk), {"probation_hours": "24", "note": "ok"})
    assert response.status_code == 302
    wish.refresh_from_db()
    assistant.refresh_from_db()
    assert wish.status == Wish.Status.APPROVED and assistant.persona == "Warm and brief."
    assert owner_console.post(url("ai-wish-revert", wish.pk)).status_code == 302
    wish.refresh_from_db()
    assistant.refresh_from_db()
    assert wish.status == Wish.Status.REVERTED and assistant.persona == ""


def test_a_proposal_is_rejected(owner_console, widget, assistant):
    wish = proposed(widget, assistant)
    assert owner_console.post(url("ai-wish-reject", wish.pk)).status_code == 302
    wish.refresh_from_db()
    assert wish.status == Wish.Status.REJECTED


def test_refused_decisions_show_the_api_messages(owner_console, widget, assistant, api):
    client = api(AI_ALL)
    wish = proposed(widget, assistant)
    api_response = client.post(f"/api/v1/wishes/{wish.pk}/approve", {"probation_hours": 0}, format="json", **idem())
    assert api_response.status_code == 422
    response = owner_console.post(url("ai-wish-approve", wish.pk), {"probation_hours": "0"})
    assert response.status_code == 422
    shown(response, api_errors(api_response)["probation_hours"])
    wish.refresh_from_db()
    assert wish.status == Wish.Status.PROPOSED
    api_response = client.post(f"/api/v1/wishes/{wish.pk}/revert", **idem())
    assert api_response.status_code == 409
    response = owner_console.post(url("ai-wish-revert", wish.pk))
    assert response.status_code == 409
    shown(response, [json.loads(api_response.content)["detail"]])


# --- tenancy ----------------------------------------------------------------------------------------------


def test_another_widgets_ids_are_404_in_every_form(owner_console, foreign):
    assistant, operator = foreign["assistant"].pk, foreign["operator"].pk
    credential, wish = foreign["credential"].pk, foreign["wish"].pk
    for name, pk, method in (
        ("ai-assistant", assistant, "get"),
        ("ai-assistant", assistant, "post"),
        ("ai-assistant-delete", assistant, "post"),
        ("ai-assistant-test", assistant, "post"),
        ("ai-operator", operator, "get"),
        ("ai-operator", operator, "post"),
        ("ai-credential", credential, "get"),
        ("ai-credential", credential, "post"),
        ("ai-credential-delete", credential, "post"),
        ("ai-credential-test", credential, "post"),
        ("ai-wish-approve", wish, "post"),
        ("ai-wish-reject", wish, "post"),
        ("ai-wish-revert", wish, "post"),
    ):
        response = getattr(owner_console, method)(
            url(name, pk), {"name": "x", "question": "hi"} if method == "post" else {}
        )
        assert response.status_code == 404, (name, method)
    assert Assistant.objects.filter(pk=assistant).exists() and Credential.objects.filter(pk=credential).exists()
    assert Wish.objects.get(pk=wish).status == Wish.Status.PROPOSED


def test_an_operator_is_refused_everywhere(console, assistant):
    for name, args in (("ai", ()), ("ai-learning", ()), ("ai-assistant", (assistant.pk,))):
        assert console.get(url(name, *args)).status_code == 403
    assert console.post(url("ai-assistant-test", assistant.pk), {"question": "hi"}).status_code == 403
    assert console.post(url("ai-settings"), {"enabled": "on", "takeover_timeout_sec": "60"}).status_code == 403
    assert not AiSettings.objects.exists()


def test_a_wish_without_a_provider_is_refused_as_the_api_refuses(owner_console, widget, assistant, api):
    api_response = api(AI_ALL).post("/api/v1/wishes", {"text": "Be warmer"}, format="json", **idem())
    assert api_response.status_code == 409
    response = owner_console.post(url("ai-learning"), {"text": "Be warmer"})
    assert response.status_code == 409
    shown(response, [json.loads(api_response.content)["detail"]])
    api_response = api(AI_ALL).post("/api/v1/wishes", {"text": ""}, format="json", **idem())
    response = owner_console.post(url("ai-learning"), {"text": ""})
    assert (api_response.status_code, response.status_code) == (422, 422)
    shown(response, api_errors(api_response)["text"])
    assert not Wish.objects.filter(widget=widget).exists()
