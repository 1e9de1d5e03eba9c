"""/console/settings/replies/: the canned responses (names: the area's slug, then `replies-...`)."""

from django.urls import path, re_path

from . import views

ID = r"(?P<canned_id>[0-9]{1,20})"

urlpatterns = [
    path("", views.replies, name="replies"),
    path("new/", views.create, name="replies-new"),
    re_path(rf"^{ID}/$", views.edit, name="replies-edit"),
    re_path(rf"^{ID}/delete/$", views.delete, name="replies-delete"),
]
