"""Every Django admin page of a tenant's rows (a widget's or an account's) is limited to the staff
user's reach (`IssuableWidgetsOnly`): a staff user of one account, holding every permission on those
pages except `core.issue_for_any_widget`, finds nothing of another account on any of them (lists,
add forms, change, delete and history views, every action). The walk covers every registered page:
a new page is either of a tenant's rows (and walked) or named below as the platform's own."""

from __future__ import annotations

import itertools

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.core.files.base import ContentFile
from django.db import models
from django.test import Client
from django.utils import timezone

from apps.core.models import Account, ApiToken, File, Widget
from tests.support.factories import UserFactory, WidgetFactory

pytestmark = pytest.mark.django_db

# The platform's own pages: rows of no account (users and groups are Django's, and so are the users'
# two-factor devices, django-otp's; plans the catalogue; event switches and beat schedules
# platform-wide settings).
PLATFORM = {"auth", "otp_totp", "otp_static", "django_celery_beat", "billing.plan", "webhooks.eventswitch"}
MARKER = "zqtheirs"


def platform(model) -> bool:
    return model._meta.app_label in PLATFORM or model._meta.label_lower in PLATFORM


def owner(model) -> str | None:
    """The lookup from a row of `model` to the account it belongs to, found without the admin's
    own mechanism; None for a row of no account."""
    if model is Account:
        return "pk"
    names = {f.name for f in model._meta.concrete_fields}
    if model is Widget or "account" in names and "widget" not in names:
        return "account"
    if "widget" in names:
        return "widget__account"
    return None


def theirs(model, account: Account):
    """The rows of `model` that belong to `account`."""
    lookup = owner(model)
    return None if lookup is None else model._default_manager.filter(**{lookup: account.pk})


_serial = itertools.count()


def _of(label: str):
    from django.apps import apps

    return lambda widget: make(apps.get_model(label), widget)


# Rows whose constraints the generic filling below does not meet.
SPECIFIC = {
    "webhooks.delivery": lambda w: {
        "subscription": _of("webhooks.subscription")(w),
        "event": _of("core.outboxevent")(w),
    },
}


def make(model, widget: Widget):
    """A row of `model` belonging to `widget` (and its account), every required field filled."""
    if model is Widget:
        return widget
    if model is Account:
        return widget.account
    if model is get_user_model():
        return UserFactory()
    if model is File:
        return File.objects.create(widget=widget, stored=ContentFile(b"x", name="x.txt"), original_name="x.txt", size=1)
    n = next(_serial)
    values = SPECIFIC.get(model._meta.label_lower, lambda w: {})(widget)
    for field in model._meta.concrete_fields:
        if field.name in values:
            continue
        if (
            field.primary_key
            and not field.is_relation
            or getattr(field, "auto_now", False)
            or getattr(field, "auto_now_add", False)
        ):
            continue
        if field.is_relation:
            if field.related_model is Widget:
                values[field.name] = widget
            elif field.related_model is Account:
                values[field.name] = widget.account
            elif not field.null:
                existing = theirs(field.related_model, widget.account)
                found = existing.first() if existing is not None else None
                values[field.name] = found or make(field.related_model, widget)
            continue
        if field.has_default() or field.null:
            continue
        if field.choices:
            values[field.name] = field.choices[0][0]
        elif isinstance(field, models.FileField):
            values[field.name] = ContentFile(b"x", name=f"{MARKER}{n}.txt")
        elif isinstance(field, models.DateTimeField):
            values[field.name] = timezone.now()
        elif isinstance(field, models.DateField):
            values[field.name] = timezone.now().date()
        elif isinstance(field, models.BooleanField):
            values[field.name] = False
        elif isinstance(field, models.IntegerField | models.DecimalField | models.FloatField):
            values[field.name] = 1
        elif isinstance(field, models.JSONField):
            values[field.name] = {}
        elif isinstance(field, models.CharField | models.TextField):
            # Their rows carry the marker the pages are searched for; the platform's rows do not.
            values[field.name] = f"{'platform' if platform(model) else MARKER}{n}"[: field.max_length or 100]
        else:
            raise AssertionError(f"no value for {model._meta.label}.{field.name}: add one to make()")
    return model._default_manager.create(**values)


def snapshot(account: Account) -> dict:
    """Every row of `account` on every tenant page, with its stored values."""
    out = {}
    for model in admin.site._registry:
        rows = theirs(model, account)
        if rows is not None:
            out[model._meta.label] = {
                row.pk: {f.attname: getattr(row, f.attname) for f in model._meta.concrete_fields} for row in rows
            }
    return out


def tenant_pages():
    return sorted((model for model in admin.site._registry if not platform(model)), key=lambda model: model._meta.label)


def test_every_registered_page_is_of_a_tenant_or_the_platform():
    unowned = [model._meta.label for model in tenant_pages() if owner(model) is None]
    assert unowned == []


def test_a_staff_user_of_another_account_finds_nothing_of_theirs_on_any_admin_page(widget):
    # given: the other account with a row on every tenant page
    other = WidgetFactory(name=f"{MARKER} widget")
    other.account.user.email = f"{MARKER}@owner.example"
    other.account.user.save()
    for model in tenant_pages():
        if not theirs(model, other.account).exists():
            make(model, other)
    before = snapshot(other.account)
    assert all(before[m._meta.label] for m in tenant_pages()), "every page has a row of theirs"
    # and a staff user of this account with every permission on those pages but the reach of all
    user = UserFactory(is_staff=True)
    types = ContentType.objects.get_for_models(*tenant_pages(), for_concrete_models=False).values()
    user.user_permissions.set(
        Permission.objects.filter(content_type__in=types).exclude(codename="issue_for_any_widget")
    )
    widget.account.user = user
    widget.account.save()
    client = Client()
    client.force_login(user)
    markers = (MARKER, other.button_guid)
    for model in tenant_pages():
        page = admin.site._registry[model]
        base = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        pks = list(before[model._meta.label])
        # when: the list, with every search and filter the page offers
        listing = client.get(base)
        assert listing.status_code == 200, base
        assert not listing.context["cl"].queryset.filter(pk__in=pks).exists(), base
        text = listing.content.decode()
        assert not any(m in text for m in markers), base
        # the add form offers none of their widgets or accounts
        request = listing.wsgi_request
        if page.has_add_permission(request):
            added = client.get(f"{base}add/")
            assert not any(m in added.content.decode() for m in markers), f"{base}add/"
        # their rows read as missing on every view of one row (a view the page refuses to everyone,
        # such as deleting on a read-only page, is 403 before any row is looked up)
        for pk in pks:
            for method, view, data in (
                ("get", "change", None),
                ("get", "delete", None),
                ("get", "history", None),
                ("post", "change", {}),
                ("post", "delete", {"post": "yes"}),
            ):
                response = getattr(client, method)(f"{base}{pk}/{view}/", data)
                assert response.status_code in (302, 403), f"{method} {base}{pk}/{view}/"
                assert not any(m in response.content.decode() for m in markers)
        # and every action on them does nothing
        for action in page.get_actions(request):
            client.post(base, {"action": action, "_selected_action": pks, "index": 0, "post": "yes"})
    # then: nothing of theirs changed
    assert snapshot(other.account) == before


def test_a_superuser_reaches_every_accounts_rows(widget, other_widget):
    client = Client()
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    for model, pk in ((Widget, other_widget.pk), (Account, other_widget.account_id)):
        base = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        assert client.get(base).context["cl"].queryset.filter(pk=pk).exists()
        assert client.get(f"{base}{pk}/change/").status_code == 200


def test_an_own_accounts_token_is_revoked_not_deleted_in_admin(widget):
    from apps.core import services

    token = services.issue_token(widget=widget, scopes=["chats:read"]).token
    client = Client()
    user = UserFactory(is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="core", codename__endswith="apitoken"))
    widget.account.user = user
    widget.account.save()
    client.force_login(user)
    response = client.post(f"/admin/core/apitoken/{token.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    token = ApiToken.objects.get(pk=token.pk)
    assert token.revoked_at is not None
