"""The widget's rows in Django admin: written through the API, so admin adds none and never moves a
row to another widget; what it does change or delete is in the audit log with the staff user."""

import pytest

from apps.audit.models import AuditEntry
from apps.widget.models import BusinessHours, WidgetIcon, WidgetSettings
from tests.support.admin import staff_client

pytestmark = pytest.mark.django_db

HOURS = {
    "enabled": True,
    "timezone": "Europe/Moscow",
    "weekly": {day: [["09:00", "18:00"]] for day in ("mon", "tue", "wed", "thu", "fri", "sat", "sun")},
    "holidays": [],
    "outside_hours": "offline_form",
}


def test_deleting_business_hours_in_admin_is_audited_with_the_staff_user(admin_client, widget):
    BusinessHours.objects.create(widget=widget, hours=HOURS)
    response = admin_client.post(f"/admin/widget/businesshours/{widget.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    row = AuditEntry.objects.get(widget=widget, action="business_hours.deleted")
    assert (row.actor_type, row.actor_name) == ("staff", "admin")
    assert row.changes["hours"] == {"from": HOURS, "to": None}


@pytest.mark.parametrize("model", ["businesshours", "widgetsettings"])
def test_admin_adds_no_rows_the_api_writes(admin_client, model):
    assert admin_client.get(f"/admin/widget/{model}/add/").status_code == 403


def test_admin_never_moves_settings_to_another_widget(admin_client, widget, other_widget):
    WidgetSettings.objects.create(widget=widget, values={"widget_theme": "dark"})
    admin_client.post(f"/admin/widget/widgetsettings/{widget.pk}/change/", {"widget": other_widget.pk})
    assert WidgetSettings.objects.get().widget_id == widget.pk


# --- reach: the staff user's issuable widgets --------------------------------------------------------------

PERMS = (
    "view_widgetsettings",
    "change_widgetsettings",
    "delete_widgetsettings",
    "view_businesshours",
    "change_businesshours",
    "delete_businesshours",
    "add_widgeticon",
    "view_widgeticon",
    "change_widgeticon",
    "delete_widgeticon",
)


def icon(widget):
    from apps.widget import services
    from apps.widget.icons import inspect_icon
    from apps.widget.tests.images import png

    content = png()
    return services.add_icon(
        widget=widget, content=content, original_name="a.png", info=inspect_icon(content, name="a.png")
    )


def theirs(other_widget) -> dict:
    return {
        "widgetsettings": WidgetSettings.objects.create(widget=other_widget, values={"widget_theme": "dark"}).pk,
        "businesshours": BusinessHours.objects.create(widget=other_widget, hours=HOURS).pk,
        "widgeticon": icon(other_widget).pk,
    }


@pytest.mark.parametrize("model", ["widgetsettings", "businesshours", "widgeticon"])
def test_another_accounts_rows_are_neither_listed_nor_shown(widget, other_widget, model):
    pk = theirs(other_widget)[model]
    client = staff_client("widget", *PERMS, account_of=widget)
    assert f"/admin/widget/{model}/{pk}/change/" not in client.get(f"/admin/widget/{model}/").content.decode()
    response = client.get(f"/admin/widget/{model}/{pk}/change/")
    assert response.status_code == 302 and response["Location"] == "/admin/"  # "does not exist"


@pytest.mark.parametrize("model", ["widgetsettings", "businesshours", "widgeticon"])
def test_another_accounts_rows_are_not_deleted(widget, other_widget, model):
    pk = theirs(other_widget)[model]
    client = staff_client("widget", *PERMS, account_of=widget)
    client.post(f"/admin/widget/{model}/{pk}/delete/", {"post": "yes"})
    client.post(f"/admin/widget/{model}/", {"action": "delete_selected", "_selected_action": [pk], "post": "yes"})
    assert {WidgetSettings: 1, BusinessHours: 1, WidgetIcon: 1} == {
        m: m.objects.filter(widget=other_widget).count() for m in (WidgetSettings, BusinessHours, WidgetIcon)
    }


def test_the_own_accounts_rows_are_listed(widget):
    WidgetSettings.objects.create(widget=widget, values={"widget_theme": "dark"})
    mine = icon(widget)
    client = staff_client("widget", *PERMS, account_of=widget)
    assert (
        f"/admin/widget/widgetsettings/{widget.pk}/change/"
        in client.get("/admin/widget/widgetsettings/").content.decode()
    )
    assert client.get(f"/admin/widget/widgeticon/{mine.pk}/change/").status_code == 200


def test_admin_adds_no_icon(widget, other_widget):
    # Icons come through POST /v1/widget/icons, which checks the content and writes the public copy.
    file = icon(other_widget).file
    WidgetIcon.objects.all().delete()
    client = staff_client("widget", *PERMS, account_of=widget)
    response = client.post(
        "/admin/widget/widgeticon/add/", {"widget": widget.pk, "file": file.pk, "created_at_0": "2026-01-01"}
    )
    assert response.status_code == 403 and not WidgetIcon.objects.exists()


def test_an_icon_keeps_its_widget_and_file(widget, other_widget):
    mine = icon(widget)
    file_id = mine.file_id
    their_file = icon(other_widget).file
    their_file.launcher_icon.delete()
    client = staff_client("widget", *PERMS, account_of=widget)
    client.post(f"/admin/widget/widgeticon/{mine.pk}/change/", {"widget": other_widget.pk, "file": their_file.pk})
    mine.refresh_from_db()
    assert (mine.widget_id, mine.file_id) == (widget.pk, file_id)
    form = client.get(f"/admin/widget/widgeticon/{mine.pk}/change/").context["adminform"].form
    assert "widget" not in form.fields and "file" not in form.fields


# --- deletions purge the served config, as the API's writes do ------------------------------------------


def served(widget) -> dict:
    from apps.widget import selectors

    return selectors.public_config(widget=widget)


def test_deleting_settings_in_admin_serves_the_defaults_at_once(admin_client, widget, purges):
    # given stored settings the served config already carries
    WidgetSettings.objects.create(widget=widget, values={"widget_theme": "dark"})
    assert served(widget)["settings"]["widget_theme"] == "dark"
    # when staff delete them
    response = admin_client.post(f"/admin/widget/widgetsettings/{widget.pk}/delete/", {"post": "yes"})
    # then the served config is purged and shows the default, not the cached "dark"
    assert response.status_code == 302 and not WidgetSettings.objects.exists()
    assert widget.pk in purges
    assert served(widget)["settings"]["widget_theme"] != "dark"
    row = AuditEntry.objects.get(widget=widget, action="widget_settings.deleted")
    assert (row.actor_type, row.actor_name) == ("staff", "admin")


def test_deleting_business_hours_in_admin_purges_the_served_config(admin_client, widget, purges):
    BusinessHours.objects.create(widget=widget, hours=HOURS)
    served(widget)
    response = admin_client.post(f"/admin/widget/businesshours/{widget.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302 and not BusinessHours.objects.exists()
    assert widget.pk in purges


def test_deleting_an_icon_in_admin_purges_the_served_config(admin_client, widget, purges):
    mine = icon(widget)
    purges.clear()
    response = admin_client.post(f"/admin/widget/widgeticon/{mine.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302 and not WidgetIcon.objects.exists()
    assert widget.pk in purges
    assert AuditEntry.objects.filter(widget=widget, action="widget_icon.deleted").exists()


@pytest.mark.parametrize(
    "model, name", [(WidgetSettings, "widgetsettings"), (BusinessHours, "businesshours"), (WidgetIcon, "widgeticon")]
)
def test_deleting_in_bulk_in_admin_purges_each_widgets_served_config(
    admin_client, widget, other_widget, purges, model, name
):
    pks = [theirs(w)[name] for w in (widget, other_widget)]
    purges.clear()
    response = admin_client.post(
        f"/admin/widget/{name}/", {"action": "delete_selected", "_selected_action": pks, "post": "yes"}
    )
    assert response.status_code == 302 and not model.objects.exists()
    assert {widget.pk, other_widget.pk} <= set(purges)
