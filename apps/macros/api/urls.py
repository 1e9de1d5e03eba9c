"""Macro routes, relative to /api/v1/ (a trailing slash is also accepted)."""

from django.urls import re_path

from apps.core.api.routers import ApiRouter

from . import views

router = ApiRouter()
router.register("macros", views.MacroViewSet, basename="macro")

urlpatterns = [
    *router.urls,
    re_path(
        r"^chats/(?P<pk>[0-9]{1,20})/macros/(?P<macro_id>[0-9]{1,20})/run/?$",
        views.MacroRunViewSet.as_view({"post": "create"}),
        name="chat-macro-run",
    ),
]
