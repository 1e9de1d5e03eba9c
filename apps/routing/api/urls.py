"""Routing routes, relative to /api/v1/ (a trailing slash is also accepted)."""

from django.urls import re_path

from apps.core.api.routers import ApiRouter

from . import views
from .sla_views import SlaPolicyViewSet

router = ApiRouter()
router.register("sla-policies", SlaPolicyViewSet, basename="sla-policy")

urlpatterns = [
    *router.urls,
    re_path(r"^routing/?$", views.RoutingSettingsView.as_view(), name="routing-settings"),
    re_path(
        r"^chats/(?P<pk>[0-9]+)/routing/?$",
        views.ChatRoutingViewSet.as_view({"get": "retrieve"}),
        name="chat-routing",
    ),
]
