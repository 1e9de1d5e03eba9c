"""/console/settings/labels/: the widget's chat labels (names: the area's slug, then `labels-...`)."""

from django.urls import path, re_path

from . import views

ID = r"(?P<label_id>[0-9]{1,20})"

urlpatterns = [
    path("", views.labels, name="labels"),
    path("new/", views.create, name="labels-new"),
    re_path(rf"^{ID}/$", views.edit, name="labels-edit"),
    re_path(rf"^{ID}/delete/$", views.delete, name="labels-delete"),
]
