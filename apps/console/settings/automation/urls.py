"""/console/settings/automation/: the rules (names: the area's slug, then `automation-...`)."""

from django.urls import path, re_path

from . import views

ID = r"(?P<rule_id>[0-9]{1,20})"

urlpatterns = [
    path("", views.automation, name="automation"),
    path("new/", views.create, name="automation-new"),
    re_path(rf"^{ID}/$", views.edit, name="automation-edit"),
    re_path(rf"^{ID}/toggle/$", views.toggle, name="automation-toggle"),
    re_path(rf"^{ID}/runs/$", views.runs, name="automation-runs"),
    re_path(rf"^{ID}/delete/$", views.delete, name="automation-delete"),
]
