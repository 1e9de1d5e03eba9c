from django.urls import re_path

from apps.core.api.routers import ApiRouter

from . import assist_views, detached_views, signed_views, views

router = ApiRouter()
router.register("ai/assistants", views.AssistantViewSet, basename="ai-assistant")
router.register("ai/operators", views.OperatorViewSet, basename="ai-operator")
router.register("ai/credentials", views.CredentialViewSet, basename="ai-credential")
router.register("ai/alerts", views.AlertViewSet, basename="ai-alert")
router.register("chats", assist_views.ChatAssistViewSet, basename="chat-assist")

urlpatterns = [
    re_path(r"^ai/settings/?$", views.AiSettingsView.as_view(), name="ai-settings"),
    re_path(r"^ai/settings/migrate/?$", views.AiSettingsMigrateView.as_view(), name="ai-settings-migrate"),
    re_path(r"^ai/messages/?$", views.AiMessagesView.as_view(), name="ai-messages"),
    re_path(r"^ai/assistants/(?P<pk>[^/]+)/test/?$", detached_views.assistant_test, name="ai-assistant-test"),
    re_path(r"^ai/demand-signals/?$", views.DemandSignalView.as_view(), name="ai-demand-signals"),
    re_path(r"^ai/marketplace/templates/?$", views.TemplateListView.as_view(), name="ai-templates"),
    re_path(
        r"^ai/marketplace/templates/(?P<slug>[^/]+)/apply/?$",
        views.TemplateApplyView.as_view(),
        name="ai-template-apply",
    ),
    re_path(r"^ai/marketplace/templates/(?P<slug>[^/]+)/?$", views.TemplateDetailView.as_view(), name="ai-template"),
    re_path(r"^ai/assistant/integration/?$", views.IntegrationView.as_view(), name="ai-integration"),
    re_path(r"^ai/assistant/turn/?$", signed_views.AssistantTurnView.as_view(), name="ai-assistant-turn"),
    re_path(
        r"^ai/assistant/speech-to-text/?$", signed_views.SpeechToTextView.as_view(), name="ai-assistant-speech-to-text"
    ),
    re_path(
        r"^ai/assistant/text-to-speech/?$", signed_views.TextToSpeechView.as_view(), name="ai-assistant-text-to-speech"
    ),
    re_path(r"^widget/translations/?$", views.WidgetTranslationsView.as_view(), name="widget-translations"),
    re_path(
        r"^widget/translations/regenerate/?$",
        views.WidgetTranslationsRegenerateView.as_view(),
        name="widget-translations-regenerate",
    ),
    *router.urls,
]
