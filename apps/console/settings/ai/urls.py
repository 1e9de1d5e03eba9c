"""/console/settings/ai/: the AI operator, assistants, credentials and learning proposals and, in its
own module, the knowledge base."""

from django.urls import include, path

urlpatterns: list = [
    path("knowledge/", include("apps.console.settings.ai.kb_urls")),
]
