"""Issuing API tokens in Django admin: `core.add_apitoken` reaches only the widgets of the staff
user's own account (`core.issue_for_any_widget` reaches every widget), and sensitive scopes need
`core.issue_sensitive_scopes` (apps.core.admin)."""

import pytest

from apps.core.auth import scopes as catalogue
from apps.core.models import ApiToken
from tests.support.admin import staff_client

pytestmark = pytest.mark.django_db

ADD = "/admin/core/apitoken/add/"


def staff(*codenames, account_of=None):
    return staff_client("core", *codenames, account_of=account_of)


def issue(client, widget, scopes):
    return client.post(ADD, {"widget": widget.pk, "name": "t", "preset": "", "scope_choices": scopes})


READ = ["chats:read"]
SENSITIVE = sorted(catalogue.SENSITIVE_SCOPES)[:1]


def test_add_apitoken_alone_cannot_issue_for_another_tenants_widget(widget):
    client = staff("add_apitoken", "view_apitoken")
    response = issue(client, widget, READ)
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    assert not ApiToken.objects.exists()


def test_staff_issue_for_their_own_accounts_widget(widget):
    client = staff("add_apitoken", "view_apitoken", account_of=widget)
    assert issue(client, widget, READ).status_code == 302
    assert ApiToken.objects.get().widget_id == widget.pk


def test_issuing_for_any_widget_needs_its_permission(widget):
    client = staff("add_apitoken", "view_apitoken", "issue_for_any_widget")
    assert issue(client, widget, READ).status_code == 302


def test_sensitive_scopes_need_their_own_permission(widget):
    assert SENSITIVE
    client = staff("add_apitoken", "view_apitoken", "issue_for_any_widget")
    response = issue(client, widget, READ + SENSITIVE)
    assert response.status_code == 200 and "Sensitive scopes" in response.content.decode()
    assert not ApiToken.objects.exists()
    client = staff("add_apitoken", "view_apitoken", "issue_for_any_widget", "issue_sensitive_scopes")
    assert issue(client, widget, READ + SENSITIVE).status_code == 302


def test_staff_see_only_their_widgets_tokens(widget, other_widget, make_token):
    make_token(widget, READ)
    other = ApiToken.objects.get()
    client = staff("view_apitoken", account_of=other_widget)
    assert other.prefix not in client.get("/admin/core/apitoken/").content.decode()
    assert client.get(f"/admin/core/apitoken/{other.pk}/change/").status_code == 302  # "does not exist"


def test_a_superuser_issues_every_scope(admin_client, widget):
    assert issue(admin_client, widget, READ + SENSITIVE).status_code == 302


def _revoke(client, token):
    return client.post("/admin/core/apitoken/", {"action": "revoke", "_selected_action": [token.pk], "index": 0})


def test_revoking_a_token_takes_the_change_permission_not_view_alone(widget):
    from apps.core.services import issue_token

    token = issue_token(widget=widget, scopes=READ).token
    _revoke(staff("view_apitoken", account_of=widget), token)
    token.refresh_from_db()
    assert token.revoked_at is None

    _revoke(staff("view_apitoken", "change_apitoken", account_of=widget), token)
    token.refresh_from_db()
    assert token.revoked_at is not None
