"""drf-spectacular's settings: what the OpenAPI document at /api/v1/schema says of itself (title,
security schemes, tags, webhooks, hooks) and the names of its shared enums. config/settings.py reads
SPECTACULAR_SETTINGS from here."""

SPECTACULAR_SETTINGS = {
    "TITLE": "Chat Widget Service API",
    "DESCRIPTION": (
        "REST API of the chat widget service. Every request is scoped to one widget and carries "
        "`Authorization: Bearer <token>`; each operation lists the scopes that grant it (any one "
        "suffices). Errors are `application/problem+json`."
    ),
    "VERSION": "1.0.0",
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PUBLIC": True,
    "SERVE_AUTHENTICATION": [],
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SECURITY": [],
    "APPEND_COMPONENTS": {
        "securitySchemes": {
            "ApiToken": {
                "type": "http",
                "scheme": "bearer",
                "description": "API token of one widget. Scopes are listed per operation.",
            },
            # The visitor API (tag `visitor`, apps.chats.visitor.schema).
            "Visitor": {
                "type": "http",
                "scheme": "Visitor",
                "description": "`Authorization: Visitor <session_token>`: the `session_token` answered once by "
                "`POST /api/visitor/v1/{button_guid}/sessions`. A missing, unknown or idle (30 days by default) "
                "session is 401 with `WWW-Authenticate: Visitor`: start a new session.",
            },
        }
    },
    "TAGS": [
        {
            "name": "visitor",
            "description": "The visitor API the embed script speaks (`Authorization: Visitor <session_token>`, "
            "no bearer token). Its websocket `/ws/visitor/{button_guid}/` and the operator socket `/ws/agent/` "
            "are described in the AsyncAPI document `/api/v1/asyncapi.yaml`.",
        }
    ],
    # What receivers are sent: the delivery request per event, in both envelopes (OpenAPI 3.1 webhooks).
    "WEBHOOKS": ["apps.webhooks.api.docs.NATIVE_DELIVERY", "apps.webhooks.api.docs.LEGACY_DELIVERY"],
    "PREPROCESSING_HOOKS": ["apps.core.api.schema.only_public_api"],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "apps.core.api.schema.add_problem_components",
    ],
    "ENUM_NAME_OVERRIDES": {
        "ChatStatusEnum": ["active", "ready", "expired", "spam"],
        "ChatHandlingEnum": ["missed", "human", "ai", "ai_to_human", "human_to_ai"],
        "OperatorTypeEnum": ["human", "ai"],
        "MessageTypeEnum": ["text", "image", "file", "location", "sticker", "keyboard"],
        "MessageAuthorEnum": ["client", "agent", "ai", "system"],
        "MessageVisibilityEnum": ["public", "note", "email", "internal"],
        "TypingStateEnum": ["start", "stop"],
        "ButtonStyleEnum": ["primary", "secondary"],
        "WebhookVocabularyEnum": ["native", "legacy"],
        "AgentTypeEnum": ["human", "ai", "webhook"],
        "AgentStatusEnum": ["active", "relaxation", "banned"],
        "AgentRoleEnum": ["owner", "operator"],
        "RoutingModeEnum": ["manual", "round_robin", "least_busy"],
        "RoutingAssignedByEnum": ["routing", "agent", "api", "automation"],
        "SlaKindEnum": ["first_response", "next_response", "resolution"],
        "InvitationStatusEnum": ["pending", "accepted", "revoked", "expired"],
        "AgentEventTypeEnum": "apps.agents.events_log.SLUGS",
        "BillingTransactionTypeEnum": "apps.billing.models.TRANSACTION_TYPES",
        "BillingTransactionStateEnum": "apps.billing.models.TRANSACTION_STATES",
        "BillingTransactionDirectionEnum": "apps.billing.models.TRANSACTION_DIRECTIONS",
        "BillingSubscriptionKindEnum": "apps.billing.models.SUBSCRIPTION_KINDS",
        "BillingSubscriptionStatusEnum": "apps.billing.models.SUBSCRIPTION_STATUSES",
        "BillingInvoiceStatusEnum": "apps.billing.models.INVOICE_STATUSES",
        "WidgetLanguageEnum": "apps.widget.settings_schema.LANGUAGES",
        "WidgetSkinEnum": "apps.widget.settings_schema.SKIN_IDS",
        "WidgetIconPresetEnum": "apps.widget.settings_schema.ICON_PRESET_IDS",
        "DeliveryStatusEnum": ["pending", "delivered", "failed", "skipped"],
        "EventStatusEnum": ["Live", "Wired"],
        "AiOperatorStatusEnum": ["active", "paused", "retired"],
        "ExternalOperatorStateEnum": ["testing", "active", "paused", "revoked", "rotating"],
        "ExternalOperatorLifecycleStateEnum": ["testing", "active", "paused", "revoked"],
        "AiAlertStateEnum": ["unacknowledged", "acknowledged"],
        "AiAlertStateFilterEnum": ["unacknowledged", "acknowledged", "all"],
        "AiDemandCategoryEnum": "apps.ai.api.serializers.DEMAND_CATEGORIES",
        "AiTemplateCategoryEnum": "apps.ai.marketplace.CATEGORIES",
        "AiTemplateLocaleEnum": "apps.ai.marketplace.LOCALES",
        "AiOperatorsStateEnum": "apps.ai.detached.OPERATOR_STATES",
        "WidgetTranslatableFieldEnum": "apps.widget.settings_vocabulary.TRANSLATABLE",
        "AiProviderEnum": ["openai", "anthropic", "gigachat", "openai_compatible"],
        "MessengerProviderEnum": "apps.channels.messengers.PROVIDERS",
        "AcceptedStatusEnum": ["accepted"],
        "LearningCycleStatusEnum": "apps.learning.models.TuningCycle.Status",
        "PersonaVersionSourceEnum": "apps.learning.models.PersonaVersion.Source",
        "WishStatusEnum": "apps.learning.models.Wish.Status",
        "PersonaRestoreEnum": ["snapshot", "previous"],
        "MacroVisibilityEnum": ["all", "personal"],
    },
}
