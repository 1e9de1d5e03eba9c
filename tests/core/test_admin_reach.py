"""Who owns a widget decides which widgets a staff user reaches in Django admin (`issuable_widgets`),
so moving a widget to another account, or an account to another user, takes
`core.issue_for_any_widget`: `core.change_widget` or `core.change_account` alone would otherwise
bring another account's widget into the staff user's reach (and its tokens, secrets, data)."""

import pytest

from apps.core.models import ApiToken
from tests.support.admin import staff_client
from tests.support.factories import UserFactory

pytestmark = pytest.mark.django_db

PERMS = ("change_widget", "view_widget", "change_account", "view_account", "add_apitoken", "view_apitoken")


def widget_form(widget, account) -> dict:
    return {"name": widget.name, "account": account.pk, "api_enabled": "on"}


def test_change_widget_alone_does_not_move_another_accounts_widget_into_reach(widget, other_widget):
    client = staff_client("core", *PERMS, account_of=widget)
    client.post(f"/admin/core/widget/{other_widget.pk}/change/", widget_form(other_widget, widget.account))
    other_widget.refresh_from_db()
    assert other_widget.account_id != widget.account_id
    response = client.post(
        "/admin/core/apitoken/add/",
        {"widget": other_widget.pk, "name": "t", "preset": "", "scope_choices": ["chats:read"]},
    )
    assert response.status_code == 200 and not ApiToken.objects.exists()


def test_change_account_alone_does_not_take_over_another_account(other_widget):
    client = staff_client("core", *PERMS)
    me = UserFactory()  # any user the staff user controls
    account = other_widget.account
    owner = account.user_id
    client.post(
        f"/admin/core/account/{account.pk}/change/",
        {
            "user": me.pk,
            "name": account.name,
            "surname": account.surname,
            "phone": "",
            "seats": account.seats,
            "created_at_0": "2026-01-01",
            "created_at_1": "00:00:00",
        },
    )
    account.refresh_from_db()
    assert account.user_id == owner


def test_issue_for_any_widget_moves_a_widget_to_another_account(widget, other_widget):
    client = staff_client("core", *PERMS, "issue_for_any_widget")
    response = client.post(f"/admin/core/widget/{other_widget.pk}/change/", widget_form(other_widget, widget.account))
    assert response.status_code == 302, response.content[:3000]
    other_widget.refresh_from_db()
    assert other_widget.account_id == widget.account_id


def test_every_admin_page_of_a_widgets_or_an_accounts_rows_is_limited_to_the_staff_users_reach():
    from django.apps import apps
    from django.contrib import admin

    from apps.core.admin_site import IssuableWidgetsOnly
    from apps.core.models import Account, Widget

    pages = [
        model._meta.label_lower
        for model in apps.get_models()
        if admin.site.is_registered(model)
        and (model in (Account, Widget) or any(f.name in ("widget", "account") for f in model._meta.concrete_fields))
        and not isinstance(admin.site.get_model_admin(model), IssuableWidgetsOnly)
    ]
    assert pages == []
