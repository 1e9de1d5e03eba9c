"""AI settings and assistants in Django admin: an assistant's prompt decides what a widget's AI tells
its visitors, so a staff user reaches only the widgets an API token could be issued for
(apps.core.services.issuable_widgets), and a row never moves to another widget."""

import pytest

from apps.ai.models import AiSettings
from tests.support.admin import staff_client

from .factories import AssistantFactory

pytestmark = pytest.mark.django_db

PERMS = ("view_assistant", "change_assistant", "view_aisettings", "change_aisettings")


def test_another_accounts_assistants_are_neither_listed_nor_shown(widget, other_widget):
    theirs = AssistantFactory(widget=other_widget, system_prompt="their secret prompt")
    client = staff_client("ai", *PERMS, account_of=widget)
    assert theirs.name not in client.get("/admin/ai/assistant/").content.decode()
    response = client.get(f"/admin/ai/assistant/{theirs.pk}/change/")
    assert response.status_code == 302 and response["Location"] == "/admin/"  # "does not exist"


def test_another_accounts_ai_settings_are_not_shown(widget, other_widget):
    theirs = AiSettings.objects.create(widget=other_widget)
    client = staff_client("ai", *PERMS, account_of=widget)
    response = client.get(f"/admin/ai/aisettings/{theirs.pk}/change/")
    assert response.status_code == 302 and response["Location"] == "/admin/"


def test_the_own_accounts_assistants_are_listed_and_keep_their_widget(widget):
    mine = AssistantFactory(widget=widget)
    client = staff_client("ai", *PERMS, account_of=widget)
    assert mine.name in client.get("/admin/ai/assistant/").content.decode()
    form = client.get(f"/admin/ai/assistant/{mine.pk}/change/").context["adminform"].form
    assert "widget" not in form.fields
