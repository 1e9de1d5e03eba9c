"""The widget's rows in Django admin: written through the API, so admin adds none and never moves a
row to another widget; what it does change or delete is in the audit log with the staff user."""

import pytest

from apps.audit.models import AuditEntry
from apps.widget.models import BusinessHours, WidgetSettings

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
