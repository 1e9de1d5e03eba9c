"""The application-assistant binding in Django admin: its token is the only signer of a widget's
signed endpoints and its credential pays for the turns, so a staff user sees only the bindings of
the widgets an API token could be issued for, and a binding is written by the API only
(bind_integration checks the token's scopes and the credential)."""

import pytest

from apps.ai.models import IntegrationBinding
from apps.core import services as core
from tests.support.admin import staff_client

from .factories import CredentialFactory

pytestmark = pytest.mark.django_db

PAGES = "/admin/ai/integrationbinding/"


def binding(widget) -> IntegrationBinding:
    token = core.issue_token(widget=widget, scopes=["ai:write"]).token
    return IntegrationBinding.objects.create(
        widget=widget,
        provider="openai",
        api_token=token,
        credential=CredentialFactory(widget=widget),
        secret_encrypted="",
    )


def staff(account_of):
    return staff_client("ai", "change_integrationbinding", "view_integrationbinding", account_of=account_of)


def test_another_accounts_binding_is_neither_listed_nor_shown(widget, other_widget):
    theirs = binding(other_widget)
    client = staff(account_of=widget)
    assert f"{PAGES}{theirs.pk}/change/" not in client.get(PAGES).content.decode()
    assert client.get(f"{PAGES}{theirs.pk}/change/").status_code == 302


def test_a_binding_is_not_rewritten_in_admin(widget):
    mine = binding(widget)
    other_credential = CredentialFactory(widget=widget, provider="anthropic", is_active=False)
    client = staff(account_of=widget)
    client.post(
        f"{PAGES}{mine.pk}/change/",
        {
            "widget": widget.pk,
            "provider": "anthropic",
            "api_token": mine.api_token_id,
            "credential": other_credential.pk,
            "assistant": "",
            "created_at_0": "2026-01-01",
            "created_at_1": "00:00:00",
        },
    )
    mine.refresh_from_db()
    assert (mine.provider, mine.credential_id) == ("openai", mine.credential_id)
    assert mine.credential_id != other_credential.pk
