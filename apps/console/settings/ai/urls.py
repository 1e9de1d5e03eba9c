"""/console/settings/ai/: the AI operator, assistants, credentials and learning proposals and, in its
own module, the knowledge base."""

from django.urls import include, path

from . import assistants, credentials, learning, pages

urlpatterns: list = [
    path("", pages.index, name="ai"),
    path("settings/", pages.save_settings, name="ai-settings"),
    path("operators/new/", pages.operator_new, name="ai-operator-new"),
    path("operators/<int:pk>/", pages.operator_edit, name="ai-operator"),
    path("assistants/new/", assistants.assistant_new, name="ai-assistant-new"),
    path("assistants/template/", assistants.template_apply, name="ai-template-apply"),
    path("assistants/<int:pk>/", assistants.assistant_edit, name="ai-assistant"),
    path("assistants/<int:pk>/delete/", assistants.assistant_delete, name="ai-assistant-delete"),
    path("assistants/<int:pk>/test/", assistants.assistant_test, name="ai-assistant-test"),
    path("credentials/new/", credentials.credential_new, name="ai-credential-new"),
    path("credentials/<int:pk>/", credentials.credential_edit, name="ai-credential"),
    path("credentials/<int:pk>/delete/", credentials.credential_delete, name="ai-credential-delete"),
    path("credentials/<int:pk>/test/", credentials.credential_test, name="ai-credential-test"),
    path("learning/", learning.wishes, name="ai-learning"),
    path("learning/wishes/<int:pk>/approve/", learning.wish_approve, name="ai-wish-approve"),
    path("learning/wishes/<int:pk>/reject/", learning.wish_reject, name="ai-wish-reject"),
    path("learning/wishes/<int:pk>/revert/", learning.wish_revert, name="ai-wish-revert"),
    path("knowledge/", include("apps.console.settings.ai.kb_urls")),
]
