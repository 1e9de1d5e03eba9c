"""Routing routes, relative to /api/v1/ (a trailing slash is also accepted)."""

from django.urls import re_path

from . import views

urlpatterns = [
    re_path(r"^routing/?$", views.RoutingSettingsView.as_view(), name="routing-settings"),
    re_path(
        r"^chats/(?P<pk>[0-9]+)/routing/?$",
        views.ChatRoutingViewSet.as_view({"get": "retrieve"}),
        name="chat-routing",
    ),
]
