"""The operator's Notifications section (Web Push on their devices), included by apps.console.urls."""

from django.urls import path, re_path

from . import push_views

urlpatterns = [
    path("notifications/", push_views.notifications, name="notifications"),
    path("notifications/subscribe/", push_views.subscribe, name="notifications-subscribe"),
    re_path(r"^notifications/(?P<device_id>[0-9]{1,20})/$", push_views.choose, name="notifications-choose"),
    re_path(r"^notifications/(?P<device_id>[0-9]{1,20})/remove/$", push_views.remove, name="notifications-remove"),
]
