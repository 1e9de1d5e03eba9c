"""The admin's AI credential form runs the API's save-time checks (apps.ai.services
apply_credential_changes): the address guard, links inside the widget, no backup cycle."""

import pytest

from apps.ai.models import Credential

from .factories import AssistantFactory, CredentialFactory

pytestmark = pytest.mark.django_db


def change(admin_client, credential, **fields):
    data = {
        "base_url": credential.base_url,
        "model": credential.model,
        "is_active": "on" if credential.is_active else "",
        "assistant": credential.assistant_id or "",
        "operator": credential.operator_id or "",
        "backup_credential": credential.backup_credential_id or "",
        **fields,
    }
    return admin_client.post(f"/admin/ai/credential/{credential.pk}/change/", data)


@pytest.mark.parametrize(
    "base_url",
    ["https://169.254.169.254/v1", "https://127.0.0.1/v1", "http://llm.example.com/v1", "https://10.1.2.3/v1"],
)
def test_a_private_or_plain_base_url_is_refused(admin_client, widget, base_url):
    credential = CredentialFactory(widget=widget)
    response = change(admin_client, credential, base_url=base_url)
    assert response.status_code == 200 and "id_base_url_error" in response.content.decode()
    credential.refresh_from_db()
    assert credential.base_url == ""


def test_a_backup_cycle_is_refused(admin_client, widget):
    first = CredentialFactory(widget=widget, provider="anthropic")
    second = CredentialFactory(widget=widget, backup_credential=first)
    response = change(admin_client, first, backup_credential=second.pk)
    assert response.status_code == 200 and "cycle" in response.content.decode()
    first.refresh_from_db()
    assert first.backup_credential_id is None


def test_links_to_another_widget_are_refused(admin_client, widget, other_widget):
    credential = CredentialFactory(widget=widget)
    foreign_backup = CredentialFactory(widget=other_widget)
    foreign_assistant = AssistantFactory(widget=other_widget)
    for fields in ({"backup_credential": foreign_backup.pk}, {"assistant": foreign_assistant.pk}):
        response = change(admin_client, credential, **fields)
        assert response.status_code == 200 and "in this widget" in response.content.decode(), fields
    credential.refresh_from_db()
    assert credential.backup_credential_id is None and credential.assistant_id is None


def test_a_valid_change_is_saved_through_the_service(admin_client, widget):
    credential = CredentialFactory(widget=widget)
    backup = CredentialFactory(widget=widget, provider="anthropic")
    assistant = AssistantFactory(widget=widget)
    response = change(admin_client, credential, backup_credential=backup.pk, assistant=assistant.pk, model="gpt-x")
    assert response.status_code == 302, response.content.decode()[:3000]
    saved = Credential.objects.get(pk=credential.pk)
    assert (saved.backup_credential_id, saved.assistant_id, saved.model) == (backup.pk, assistant.pk, "gpt-x")


def _staff(account_of):
    from django.contrib.auth.models import Permission
    from django.test import Client

    from tests.support.factories import UserFactory

    user = UserFactory(is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="ai", codename__in=["view_credential", "change_credential"])
    )
    account_of.account.user = user
    account_of.account.save()
    client = Client()
    client.force_login(user)
    return client


def test_staff_neither_see_nor_change_another_accounts_credentials(widget, other_widget):
    theirs = CredentialFactory(widget=other_widget)
    client = _staff(account_of=widget)
    assert f"/admin/ai/credential/{theirs.pk}/change/" not in client.get("/admin/ai/credential/").content.decode()
    response = change(client, theirs, base_url="https://llm.attacker.example/v1")
    assert response.status_code == 302 and response["Location"] == "/admin/"  # "does not exist"
    theirs.refresh_from_db()
    assert theirs.base_url == ""


def test_staff_change_their_own_accounts_credentials(widget):
    mine = CredentialFactory(widget=widget)
    client = _staff(account_of=widget)
    response = change(client, mine, model="gpt-4o-mini")
    assert response.status_code == 302 and response["Location"] == "/admin/ai/credential/"
    mine.refresh_from_db()
    assert mine.model == "gpt-4o-mini"


def test_a_new_base_url_takes_the_key_again(admin_client, widget):
    from apps.core.crypto import decrypt_secret

    credential = CredentialFactory(widget=widget)
    stored = credential.api_key_encrypted
    response = change(admin_client, credential, base_url="https://llm.example.com/v1")
    assert response.status_code == 200 and "id_api_key_error" in response.content.decode()
    credential.refresh_from_db()
    assert (credential.base_url, credential.api_key_encrypted) == ("", stored)

    response = change(admin_client, credential, base_url="https://llm.example.com/v1", api_key="sk-new-key")
    assert response.status_code == 302
    credential.refresh_from_db()
    assert (
        credential.base_url == "https://llm.example.com/v1"
        and decrypt_secret(credential.api_key_encrypted) == "sk-new-key"
    )
    assert "sk-new-key" not in admin_client.get(f"/admin/ai/credential/{credential.pk}/change/").content.decode()
