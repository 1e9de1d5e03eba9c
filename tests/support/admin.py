"""Django admin in tests: a signed-in staff user with some model permissions."""

from __future__ import annotations

from django.contrib.auth.models import Permission
from django.db.models import Q
from django.test import Client

from .factories import UserFactory


def staff_client(app_label: str, *codenames: str, account_of=None) -> Client:
    """A client signed in as a new staff user holding `codenames` of `app_label` (a codename written
    `other_app.codename` is of that app); with `account_of` (a widget), the user owns that widget's
    account, so the admin's issuable-widget reach covers it."""
    user = UserFactory(is_staff=True)
    wanted = Q(pk__in=[])
    for name in codenames:
        label, _, codename = name.rpartition(".")
        wanted |= Q(content_type__app_label=label or app_label, codename=codename)
    user.user_permissions.set(Permission.objects.filter(wanted))
    if account_of is not None:
        account_of.account.user = user
        account_of.account.save()
    client = Client()
    client.force_login(user)
    return client
