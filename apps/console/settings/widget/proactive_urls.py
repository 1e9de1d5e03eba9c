"""/console/settings/widget/proactive/: the widget's proactive messages."""

from django.urls import path, re_path

from . import proactive

ID = r"(?P<message_id>[0-9]{1,20})"

urlpatterns: list = [
    path("", proactive.proactive_list, name="widget-proactive"),
    path("new/", proactive.create, name="widget-proactive-new"),
    re_path(rf"^{ID}/$", proactive.edit, name="widget-proactive-edit"),
    re_path(rf"^{ID}/enabled/$", proactive.toggle, name="widget-proactive-toggle"),
    re_path(rf"^{ID}/delete/$", proactive.delete, name="widget-proactive-delete"),
]
