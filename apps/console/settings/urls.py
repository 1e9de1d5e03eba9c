"""/console/settings/: the front page, then each area's pages (an area's own urls module)."""

from django.urls import include, path

from . import views

app_name = "settings"

urlpatterns = [
    path("", views.index, name="index"),
    path("widget/", include("apps.console.settings.widget.urls")),
    path("people/", include("apps.console.settings.people.urls")),
    path("replies/", include("apps.console.settings.replies.urls")),
    path("labels/", include("apps.console.settings.labels.urls")),
    path("macros/", include("apps.console.settings.macros.urls")),
    path("ai/", include("apps.console.settings.ai.urls")),
    path("channels/", include("apps.console.settings.channels.urls")),
    path("developers/", include("apps.console.settings.developers.urls")),
    path("data/", include("apps.console.settings.data.urls")),
    path("automation/", include("apps.console.settings.automation.urls")),
]
