"""/console/settings/macros/: the macros (names: the area's slug, then `macros-...`)."""

from django.urls import path, re_path

from . import views

ID = r"(?P<macro_id>[0-9]{1,20})"

urlpatterns = [
    path("", views.macros, name="macros"),
    path("new/", views.create, name="macros-new"),
    re_path(rf"^{ID}/$", views.edit, name="macros-edit"),
    re_path(rf"^{ID}/delete/$", views.delete, name="macros-delete"),
]
