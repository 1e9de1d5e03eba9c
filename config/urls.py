from django.conf import settings
from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from apps.chats.asyncapi import asyncapi_yaml
from apps.core import views as core_views

# Each app contributes `api/urls.py` with `urlpatterns` relative to /api/v1/ as its issue lands.
api_v1 = [
    # stats first: its agents/stats and chats/export are not the agents' or chats' {id}
    path("", include("apps.stats.api.urls")),
    # routing's chats/{id}/routing before the chats' own routes
    path("", include("apps.routing.api.urls")),
    # macros' chats/{id}/macros/{macro_id}/run before the chats' own routes
    path("", include("apps.macros.api.urls")),
    path("", include("apps.chats.api.urls")),
    path("", include("apps.webhooks.api.urls")),
    path("", include("apps.agents.api.urls")),
    path("", include("apps.billing.api.urls")),
    path("", include("apps.widget.api.urls")),
    path("", include("apps.ai.api.urls")),
    path("", include("apps.learning.api.urls")),
    path("", include("apps.kb.api.urls")),
    path("", include("apps.support.api.urls")),
    path("", include("apps.channels.api.urls")),
    path("", include("apps.external.api.urls")),
    path("", include("apps.canned.api.urls")),
    path("", include("apps.privacy.api.urls")),
    path("", include("apps.proactive.api.urls")),
    path("", include("apps.mentions.api.urls")),
    path("", include("apps.automation.api.urls")),
]

urlpatterns = [
    path("healthz", core_views.healthz, name="healthz"),
    path("metrics", core_views.metrics_endpoint, name="metrics"),
    # The API first: Django tries the patterns in order on every request, and the pages' patterns
    # (admin, console, docs) before the API cost every API call 10 us of its resolving (25 -> 15 us
    # for /api/v1/chats). No page pattern matches a path under api/v1/ or api/visitor/v1/, and the
    # schema and AsyncAPI routes below are not matched by any API pattern.
    path("api/v1/", include(api_v1)),
    path("api/visitor/v1/", include("apps.chats.visitor.urls")),
    path("admin/", admin.site.urls),
    path("invite/", include("apps.console.invite_urls")),
    path("demo/", include("apps.widget.demo_urls")),
    path("console/", include("apps.console.urls")),
    path("setup/", include("apps.console.setup_urls")),
    re_path(r"^api/v1/schema/?$", SpectacularAPIView.as_view(), name="schema"),
    # The websockets' frames (AsyncAPI 3), beside the OpenAPI document.
    re_path(r"^api/v1/asyncapi\.yaml$", asyncapi_yaml, name="asyncapi"),
    re_path(r"^api/docs/?$", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    re_path(r"^api/redoc/?$", SpectacularRedocView.as_view(url_name="schema"), name="redoc"),
    re_path(r"^api/problems/?$", core_views.problem_index, name="problem-index"),
    re_path(r"^api/problems/(?P<code>[a-z0-9_]+)/?$", core_views.problem_page, name="problem"),
    path("api/compat/legacy/", include("apps.compat.api.urls")),
    path("api/hooks/", include("apps.channels.hook_urls")),
    path("api/files/", include("apps.chats.api.urls_download")),
]

if settings.STORAGES["default"]["BACKEND"] == "django.core.files.storage.FileSystemStorage":
    # Public assets only (operator avatars, department avatars, launcher icons); chat files are
    # private and served through signed URLs (/api/files/<token>). Object storages serve their own.
    # The view decides what is public after normalising the path (a pattern here cannot: it sees
    # `avatars/../files/...` before normalisation).
    urlpatterns.append(re_path(r"^media/(?P<path>.*)$", core_views.public_media, name="public-media"))
