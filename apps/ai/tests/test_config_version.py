"""Every write path of the AI configuration changes `AiSettings.config_version` in its transaction
(apps.ai.config): the AI services, the agents services on an AI operator's row, and Django admin. A
change of a human agent leaves it alone."""

import pytest

from apps.agents import services as agent_services
from apps.ai import services
from apps.ai.models import AiSettings, Credential
from apps.audit.models import AuditEntry
from tests.support.admin import staff_client
from tests.support.factories import AgentFactory

from .factories import AiOperatorFactory, AssistantFactory, CredentialFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def ai(widget):
    """A widget with its settings row, a default assistant run by an AI operator, and a credential."""
    row = AiSettings.objects.create(widget=widget, enabled=True, legacy_persona="Warm.")
    assistant = AssistantFactory(widget=widget, is_default=True)
    operator = AiOperatorFactory(assistant=assistant)
    credential = CredentialFactory(widget=widget)
    return type(
        "Ai", (), {"widget": widget, "row": row, "assistant": assistant, "operator": operator, "cred": credential}
    )


def version(widget) -> int:
    return AiSettings.objects.values_list("config_version", flat=True).get(widget=widget)


WRITES = {
    "update_settings": lambda ai: services.update_settings(widget=ai.widget, changes={"rag_enabled": True}),
    "patch_phrases": lambda ai: services.patch_phrases(widget=ai.widget, body={"greeting": {"en": "Hi"}}),
    "replace_phrases": lambda ai: services.replace_phrases(widget=ai.widget, body={"greeting": {"en": "Hi"}}),
    "migrate_legacy_settings": lambda ai: services.migrate_legacy_settings(widget=ai.widget),
    "create_assistant": lambda ai: services.create_assistant(widget=ai.widget, fields={"name": "Second"}),
    "update_assistant": lambda ai: services.update_assistant(
        widget=ai.widget, assistant=ai.assistant, changes={"system_prompt": "Sell tea."}
    ),
    "delete_assistant": lambda ai: services.delete_assistant(
        widget=ai.widget, assistant=AssistantFactory(widget=ai.widget)
    ),
    "apply_template": lambda ai: services.apply_template(widget=ai.widget, slug="customer-support", locale="en"),
    "create_credential": lambda ai: services.create_credential(
        widget=ai.widget, data={"provider": "anthropic", "api_key": "sk-ant-test"}
    ),
    "update_credential": lambda ai: services.update_credential(
        widget=ai.widget, credential=ai.cred, changes={"model": "gpt-4o"}
    ),
    "delete_credential": lambda ai: services.delete_credential(widget=ai.widget, credential=ai.cred),
    "create_operator": lambda ai: services.create_operator(widget=ai.widget, assistant=ai.assistant, name="Second"),
    "update_operator": lambda ai: services.update_operator(
        widget=ai.widget, operator=ai.operator, changes={"name": "Renamed"}
    ),
    "retire_operator": lambda ai: services.retire_operator(widget=ai.widget, operator=ai.operator),
    "agents.suspend_agent": lambda ai: agent_services.suspend_agent(widget=ai.widget, agent=ai.operator),
    "agents.set_show_in_header": lambda ai: agent_services.set_show_in_header(
        widget=ai.widget, agent=ai.operator, show_in_header=not ai.operator.show_in_header
    ),
    "agents.remove_agent_avatar": lambda ai: agent_services.remove_agent_avatar(widget=ai.widget, agent=ai.operator),
}


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
def test_every_write_of_the_ai_configuration_changes_its_version(ai, write):
    before = version(ai.widget)
    write(ai)
    assert version(ai.widget) != before


def test_a_write_that_rolls_back_leaves_the_version(ai):
    before = version(ai.widget)
    with pytest.raises(services.AssistantInUse):
        services.delete_assistant(widget=ai.widget, assistant=ai.assistant)
    assert version(ai.widget) == before


def test_a_human_agents_change_leaves_the_version(ai):
    before = version(ai.widget)
    human = AgentFactory(widget=ai.widget)
    agent_services.set_show_in_header(widget=ai.widget, agent=human, show_in_header=not human.show_in_header)
    agent_services.suspend_agent(widget=ai.widget, agent=human)
    assert version(ai.widget) == before


def test_a_credential_deleted_in_django_admin_changes_the_version_and_is_audited(ai):
    before = version(ai.widget)
    client = staff_client("ai", "view_credential", "delete_credential", account_of=ai.widget)
    assert client.post(f"/admin/ai/credential/{ai.cred.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not Credential.objects.filter(pk=ai.cred.pk).exists()
    assert version(ai.widget) != before
    entry = AuditEntry.objects.get(action="ai_credential.deleted", target_id=str(ai.cred.pk))
    assert entry.target_type == "ai_credential"


def test_an_assistant_saved_in_django_admin_changes_the_version(ai):
    before = version(ai.widget)
    client = staff_client("ai", "view_assistant", "change_assistant", account_of=ai.widget)
    body = {
        "widget": ai.widget.pk,
        "name": ai.assistant.name,
        "enabled": "on",
        "is_default": "on",
        "system_prompt": "Sell coffee.",
        "temperature": "",
        "escalation_triggers": "[]",
        "quick_phrases": "[]",
        "greeting_i18n": "{}",
        "quick_phrases_i18n": "{}",
    }
    response = client.post(f"/admin/ai/assistant/{ai.assistant.pk}/change/", body)
    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else response
    assert version(ai.widget) != before
