"""The OpenAPI document reads well to an integrator and to generators:

- every operation, of every app (routes added later included), has a summary and a description
  of its own: summaries unique, descriptions unique (scope footers aside), none copied from a
  docstring of one of our base classes;
- no schema description is a docstring inherited from a base class of ours (`InputSerializer`'s
  "Base of every XInput serializer" reached 18 input schemas);
- every parameter (path, query, header) says what it is, and every property of the schemas listed
  in `DESCRIBED_SCHEMAS` and of the webhook bodies says what its value is;
- every array schema says what its members are (`items`): openapi-python-client drops a model
  holding an array without them;
- the visitor API is documented under its own tag with the `Visitor` security scheme.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections import Counter

import pytest
from django.test import override_settings
from drf_spectacular.generators import SchemaGenerator

from apps.core.api.schema import own_doc

pytestmark = pytest.mark.django_db

METHODS = ("get", "post", "put", "patch", "delete")
FOOTER = re.compile(r"\s*\*\*Scopes\*\* \(any one\):.*$", re.S)


@pytest.fixture(scope="module")
def doc(django_db_blocker) -> dict:
    with django_db_blocker.unblock(), override_settings(SCHEMA_INCLUDE_TEST_ROUTES=False):
        return SchemaGenerator().get_schema(request=None, public=True)


def operations(doc):
    for path, item in doc["paths"].items():
        for method in METHODS:
            if method in item:
                yield f"{method.upper()} {path}", item[method]


def described(op: dict) -> str:
    return FOOTER.sub("", op.get("description", "")).strip()


def base_class_docstrings() -> set[str]:
    """Docstrings of our classes that other classes inherit from (base views, base serializers,
    mixins): text written for the code's readers, which must never reach the document."""
    docs = set()
    for name, module in list(sys.modules.items()):
        if not name.startswith("apps.") or module is None:
            continue
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != name or not cls.__subclasses__():
                continue
            text = own_doc(cls)
            if text:
                docs.add(text)
    return docs


def test_every_operation_has_a_summary_and_a_description(doc):
    missing = [key for key, op in operations(doc) if not op.get("summary") or not described(op)]
    assert not missing, f"operations without a summary or a description: {missing}"


def test_summaries_are_unique(doc):
    counts = Counter(op["summary"] for _, op in operations(doc) if op.get("summary"))
    assert not [s for s, n in counts.items() if n > 1]


def test_descriptions_are_not_shared_between_operations(doc):
    by_text: dict[str, list[str]] = {}
    for key, op in operations(doc):
        by_text.setdefault(described(op), []).append(key)
    shared = {text[:60]: keys for text, keys in by_text.items() if len(keys) > 1}
    assert not shared, f"operations sharing one description: {shared}"


def test_no_description_is_a_docstring_of_our_base_classes(doc):
    internal = base_class_docstrings()
    assert any("XInput" in text for text in internal)  # the detector sees InputSerializer's docstring
    leaks = [key for key, op in operations(doc) if described(op) in internal]
    for name, schema in doc["components"]["schemas"].items():
        if inspect.cleandoc(schema.get("description", "")) in internal:
            leaks.append(f"schema {name}")
    assert not leaks, f"internal docstrings shown as descriptions: {leaks}"


def _walk(node, path=""):
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            yield from _walk(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _walk(value, f"{path}/{index}")


def test_every_parameter_has_a_description(doc):
    bare = [
        f"{key} {param['in']} {param['name']}"
        for key, op in operations(doc)
        for param in op.get("parameters", [])
        if not param.get("description", "").strip()
    ]
    assert not bare, f"parameters without a description: {bare}"


def test_a_parameter_with_choices_says_what_it_selects(doc):
    """drf-spectacular lists a choice field's values (one `* a - a` line each) after its help text; a
    list of values alone does not say what the parameter does."""
    bare = [
        f"{key} {param['in']} {param['name']}"
        for key, op in operations(doc)
        for param in op.get("parameters", [])
        if param.get("description", "").startswith("* `")
    ]
    assert not bare, f"parameters described only by their values: {bare}"


# Schemas whose every property says what its value is, grouped by resource (those an integrator reads
# and writes first at the top). Add a new schema here once its properties are described; every keyset
# page (`Paginated...List`) is included without being listed.
DESCRIBED_SCHEMAS = (
    # chats and messages
    "ChatDoc",
    "AttributionDoc",
    "MessageDoc",
    "AuthorDoc",
    "FileRefDoc",
    "KeyboardDoc",
    "KeyboardButtonDoc",
    "CoordsDoc",
    "StickerDoc",
    "MessageSourceDoc",
    "AcceptedDoc",
    "MessageAcceptedDoc",
    "TypingAcceptedDoc",
    "SeenDoc",
    "CloseInputRequest",
    "StateInputRequest",
    "TransferInputRequest",
    "MessageInputRequest",
    "KeyboardInputRequest",
    "KeyboardButtonInputRequest",
    "CoordsInputRequest",
    "StickerInputRequest",
    "TypingInputRequest",
    "SeenInputRequest",
    # contacts and tags
    "ContactDoc",
    "ContactTagsDoc",
    "TagListDoc",
    "PatchedContactPatchInputRequest",
    "TagsInputRequest",
    # agents, invitations, departments
    "AgentDoc",
    "AvatarDoc",
    "AgentEventDoc",
    "InvitationDoc",
    "DepartmentDoc",
    "PatchedAgentPatchInputRequest",
    "InvitationInputRequest",
    "DepartmentInputRequest",
    "PatchedDepartmentPatchInputRequest",
    "DepartmentAgentsInputRequest",
    "DepartmentScheduleInputRequest",
    # webhook subscriptions and deliveries
    "SubscriptionDoc",
    "SubscriptionWrittenDoc",
    "SubscriptionCreatedDoc",
    "SecretDoc",
    "DeliveryDoc",
    "AttemptDoc",
    "RedeliveryDoc",
    "EventCatalogueDoc",
    "EventTypeDoc",
    "SubscriptionCreateInputRequest",
    "PatchedSubscriptionPatchInputRequest",
    "RotateSecretInputRequest",
    "RedeliverInputRequest",
    # custom channels, compat, signed assistant calls
    "InboundMessageInputRequest",
    "InboundMessageBodyInputRequest",
    "WebhookOutcomeDoc",
    "BotAnswerDoc",
    "ChatAcceptedDoc",
    "TurnMessageInputRequest",
    # the visitor API
    "VisitorConfigDoc",
    "VisitorHeaderOperatorDoc",
    "VisitorSessionDoc",
    "VisitorMessageDoc",
    "VisitorAuthorDoc",
    "VisitorMessageListDoc",
    "VisitorMessageCreatedDoc",
    "VisitorTypingDoc",
    "VisitorQueueDoc",
    "VisitorRatingDoc",
    "VisitorFileDoc",
    "VisitorSessionInputRequest",
    "VisitorMessageInputRequest",
    "VisitorTypingInputRequest",
    "VisitorRatingInputRequest",
    "VisitorOfflineInputRequest",
    # AI settings, assistants, AI operators, credentials
    "SettingsDoc",
    "EffectiveAssistantDoc",
    "LearningTargetDoc",
    "PatchedSettingsPatchInputRequest",
    "PhraseDoc",
    "AssistantDoc",
    "AssistantCreatedDoc",
    "AssistantInputRequest",
    "PatchedAssistantInputRequest",
    "OperatorDoc",
    "OperatorInputRequest",
    "PatchedOperatorInputRequest",
    "CredentialDoc",
    "BackupLinkDoc",
    "CredentialInputRequest",
    "PatchedCredentialPatchInputRequest",
    # statistics
    "StatsDoc",
    "StatsDataDoc",
    "WidgetMetricsDoc",
    "ChannelStatsDoc",
    "ChannelRowDoc",
    "TimeseriesDoc",
    "TimeseriesDataDoc",
    "BucketDoc",
    "TimeseriesMetricsDoc",
    "AgentStatsListDoc",
    "AgentStatsDoc",
    "AgentStatsDataDoc",
    "AgentRowDoc",
    "AgentMetricsDoc",
    "RatingDistributionDoc",
    # account and billing
    "AccountDoc",
    "PlanDoc",
    "LegalEntityDoc",
    "BillingBalanceDoc",
    "BillingTransactionDoc",
    "BillingSubscriptionDoc",
    "BillingInvoiceDoc",
    "BillingInvoiceDetailDoc",
    "BillingInvoiceItemDoc",
    "PatchedAccountPatchInputRequest",
    "LegalEntityInputRequest",
    "PatchedLegalEntityInputRequest",
    # support: writes and the account link
    "SupportAccountDoc",
    "SupportSenderDoc",
    "ClaimInputRequest",
    "ReleaseInputRequest",
    "ReplyInputRequest",
    "TicketCloseInputRequest",
    "TicketReopenInputRequest",
    # AI: detached test, models, alerts, demand, marketplace, integration, translations
    "TestInputDocRequest",
    "OperatorsDoc",
    "EscalationDoc",
    "TestResultDoc",
    "TestResultEnvelope",
    "InspectionDoc",
    "InspectionEnvelope",
    "ModelDoc",
    "ModelListDoc",
    "AcknowledgeInputRequest",
    "AlertDoc",
    "AcknowledgedDoc",
    "DemandSignalDoc",
    "DemandListDoc",
    "TemplateSummaryDoc",
    "TemplatePageDoc",
    "TemplateDoc",
    "IntegrationInputRequest",
    "IntegrationDoc",
    "IntegrationEnvelope",
    "IntegrationCreatedDoc",
    "IntegrationCreatedEnvelope",
    "TranslationCountsDoc",
    "TranslationStatusDoc",
    "TranslationItemDoc",
    "TranslationsDoc",
    "TranslationsEnvelope",
    "RegenerateJobDoc",
    "RegenerateDoc",
    "RegenerateEnvelope",
    "RegenerateInputRequest",
    # AI phrases, department weeks, custom channels, VK, ad cabinets, files, canned responses, widget
    "PhraseLanguagesDoc",
    "PhrasesDoc",
    "PhrasesInputRequest",
    "PatchedPhrasesInputRequest",
    "PhraseLanguagesInputRequest",
    "WeekDoc",
    "PartialWeekDocRequest",
    "ChannelDoc",
    "ChannelCreatedDoc",
    "ChannelStatusDoc",
    "InboundAcceptedDoc",
    "ChannelCreateInputRequest",
    "VkCommunityDoc",
    "VkCommunityCreatedDoc",
    "VkCommunityInputRequest",
    "AdCabinetDoc",
    "PatchedAdCabinetPatchInputRequest",
    "FileDoc",
    "CannedResponseDoc",
    "SlaPolicyDoc",
    "SlaStatsDoc",
    "SlaStatsDataDoc",
    "SlaKindsDoc",
    "SlaAgentDoc",
    "SlaOutcomeDoc",
    "SlaPolicyInputRequest",
    "PatchedSlaPolicyPatchInputRequest",
    "ProactiveMessageDoc",
    "ProactiveRulesDoc",
    "ProactiveStatsDoc",
    "ProactiveMessageInputRequest",
    "PatchedProactiveMessagePatchInputRequest",
    "ProactiveRulesInputRequest",
    "VisitorProactiveDoc",
    "VisitorProactiveRulesDoc",
    "VisitorProactiveSenderDoc",
    "WidgetSettingsEnvelope",
    "SettingsSchemaEnvelope",
    "LanguageDoc",
    "LanguageEnvelope",
    "SkinDoc",
    "SkinListEnvelope",
    "IconPresetDoc",
    "IconPresetListEnvelope",
    "IconDoc",
    "IconEnvelope",
    "EmbedDoc",
    "EmbedEnvelope",
    "CachePurgeDoc",
    "CachePurgeEnvelope",
    # self-learning and improvement wishes
    "EvidenceDoc",
    "GateDoc",
    "KillSwitchDoc",
    "PolicyDoc",
    "ProbationDoc",
    "ProposalDoc",
    "CycleDoc",
    "ControlPanelTargetDoc",
    "ControlPanelDoc",
    "PairDoc",
    "VersionProbationDoc",
    "VersionDoc",
    "ActorDoc",
    "HistoryDoc",
    "TrailDoc",
    "WishDoc",
    "WishDetailDoc",
    "ChangesDoc",
    "PreviewDoc",
    "WindowDoc",
    "RevertInputRequest",
    "WishInputRequest",
    "ApproveInputRequest",
    # knowledge base
    "RuleDoc",
    "HitDoc",
    "SourceDoc",
    "SourcePageDoc",
    "DeletedDoc",
    "SearchDoc",
    "DocumentDoc",
    "DocumentErrorDoc",
    "DocumentDeletedDoc",
    "CrawlerConfigDoc",
    "CrawlFailureDoc",
    "CrawlRunDoc",
    "RuleInputRequest",
    "PatchedRuleInputRequest",
    "CrawlerInputRequest",
    # messengers and external operators
    "MessengerDoc",
    "MessengerListDoc",
    "MessengerWriteDoc",
    "MessengerCredentialDocRequest",
    "ExternalOperatorDoc",
    "ForceDrainDoc",
    "ProbeDoc",
    "ProbeAttemptDoc",
    "ExternalReplyDoc",
    "PatchedExternalOperatorPatchInputRequest",
    "LifecycleInputRequest",
    "ExternalReplyInputRequest",
    # support: chats, messages, tickets
    "SupportChatDoc",
    "SupportChatListDoc",
    "SupportLeaseDoc",
    "SupportLastMessageDoc",
    "SupportTicketBriefDoc",
    "SupportAiStateDoc",
    "SupportMessageDoc",
    "SupportMessageListDoc",
    "SupportChatRefDoc",
    "SupportAttachmentRefDoc",
    "SupportAttachmentDoc",
    "SupportClaimDoc",
    "SupportReleaseDoc",
    "SupportReplyDoc",
    "SupportTicketEffectDoc",
    "SupportTicketDoc",
    "SupportTicketListDoc",
    "SupportTicketDetailDoc",
    # signed assistant calls, privacy and audit, knowledge-base status, agent assist, widget settings
    "AccountLinkDoc",
    "AccountLinkInputRequest",
    "AccountRefInputRequest",
    "AssistantStatusDoc",
    "AuditActorDoc",
    "AuditEntryDoc",
    "AuditTargetDoc",
    "AvatarMultipartDocRequest",
    "CannedResponseInputRequest",
    "ClientInputRequest",
    "CrawlerDoc",
    "ErasureQueuedDoc",
    "FileMultipartDocRequest",
    "FileUrlInputRequest",
    "GrantInputRequest",
    "IconUploadDocRequest",
    "LinkAccountInputRequest",
    "PatchedCannedResponsePatchInputRequest",
    "PatchedWidgetSettingsRequest",
    "RefundInputRequest",
    "RenderDoc",
    "ReplyDoc",
    "RetentionDoc",
    "RetentionInputRequest",
    "RevokeInputRequest",
    "SpeechToTextDoc",
    "SpeechToTextInputRequest",
    "StatusAccountInputRequest",
    "StatusDoc",
    "SuggestionDoc",
    "SuggestionSourceDoc",
    "SupportActionDoc",
    "TargetInputRequest",
    "TextToSpeechDoc",
    "TextToSpeechInputRequest",
    "TicketCursorInputRequest",
    "TicketIntakeDoc",
    "TicketIntakeInputRequest",
    "TicketReplyDoc",
    "TicketStatusDoc",
    "TicketStatusInputRequest",
    "TicketStatusItemDoc",
    "ToolCallDoc",
    "ToolInputRequest",
    "ToolResultInputRequest",
    "TurnDoc",
    "TurnInputRequest",
    "UploadMultipartDocRequest",
    "VisitorFileUploadDocRequest",
    "WidgetSettings",
    "WidgetSettingsSchema",
    # errors
    "Problem",
)


def test_every_property_of_the_described_schemas_has_a_description(doc):
    schemas = doc["components"]["schemas"]
    gone = [name for name in DESCRIBED_SCHEMAS if name not in schemas]
    assert not gone, f"listed schemas not in the document: {gone}"
    pages = [name for name in schemas if name.startswith("Paginated") and name.endswith("List")]
    assert pages
    bare = [
        f"{name}{path}.{member}"
        for name in (*DESCRIBED_SCHEMAS, *pages)
        for path, node in _walk(schemas[name])
        for member, prop in (node.get("properties") or {}).items()
        if isinstance(prop, dict) and not prop.get("description", "").strip()
    ]
    assert not bare, f"properties without a description: {bare}"


def test_every_member_of_a_webhook_body_has_a_description(doc):
    bare = [
        f"{path}.{member}"
        for path, node in _walk(doc["webhooks"])
        for member, prop in (node.get("properties") or {}).items()
        if isinstance(prop, dict) and not prop.get("description", "").strip()
    ]
    assert not bare, f"webhook body members without a description: {bare}"


def test_every_array_schema_declares_its_items(doc):
    bare = []
    for path, node in _walk(doc):
        kind = node.get("type")
        is_array = kind == "array" or (isinstance(kind, list) and "array" in kind)
        if is_array and "items" not in node and "prefixItems" not in node:
            bare.append(path)
    assert not bare, bare


def test_no_answer_is_documented_as_a_bare_array(doc):
    """Every list of the API answers an object (`{data, next_cursor}`), never a top-level array: a
    list action without a paginator must say so (`extend_schema_serializer(many=False)`)."""
    arrays = [
        f"{name} {code}"
        for name, op in operations(doc)
        for code, answer in op.get("responses", {}).items()
        for media in (answer.get("content") or {}).values()
        if media.get("schema", {}).get("type") == "array"
    ]
    assert not arrays, arrays


def test_message_send_says_when_agent_id_is_required(doc):
    member = doc["components"]["schemas"]["MessageInputRequest"]["properties"]["agent_id"]
    assert "Required when the chat has no assigned agent" in member["description"]
    op = doc["paths"]["/api/v1/chats/{id}/messages"]["post"]
    assert "`agent_id`" in op["description"] and "required when the chat has no assigned agent" in op["description"]


def test_the_visitor_api_has_its_tag_and_security_scheme(doc):
    scheme = doc["components"]["securitySchemes"]["Visitor"]
    assert scheme == {**scheme, "type": "http", "scheme": "Visitor"}
    visitor = {key: op for key, op in operations(doc) if " /api/visitor/v1/" in key}
    assert set(visitor) == {
        "GET /api/visitor/v1/{button_guid}/config",
        "POST /api/visitor/v1/{button_guid}/sessions",
        "GET /api/visitor/v1/{button_guid}/messages",
        "POST /api/visitor/v1/{button_guid}/messages",
        "POST /api/visitor/v1/{button_guid}/typing",
        "POST /api/visitor/v1/{button_guid}/rating",
        "POST /api/visitor/v1/{button_guid}/offline",
        "POST /api/visitor/v1/{button_guid}/files",
        "GET /api/visitor/v1/{button_guid}/queue",
        "POST /api/visitor/v1/{button_guid}/proactive/{proactive_id}/events",
        "POST /api/visitor/v1/{button_guid}/prechat",
        "POST /api/visitor/v1/{button_guid}/identity",
        "DELETE /api/visitor/v1/{button_guid}/sessions",
        "PATCH /api/visitor/v1/{button_guid}/attributes",
    }
    for key, op in visitor.items():
        assert op["tags"] == ["visitor"], key
        public = key.endswith(("/config", "/sessions", "/events")) and not key.startswith("DELETE")
        assert op["security"] == ([] if public else [{"Visitor": []}]), key
        assert ("401" in op["responses"]) is not public, key
        assert "x-scopes" not in op
    send = doc["paths"]["/api/visitor/v1/{button_guid}/messages"]["post"]
    body = send["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert set(doc["components"]["schemas"][body]["properties"]) == {"type", "body", "file_id", "proactive_id"}


def test_the_visitor_config_with_header_operators_matches_its_documented_shape(client, widget, doc, monkeypatch):
    """The config's `operators` (live presence, every kind and presence) against the document."""
    import jsonschema

    from apps.agents import selectors as agent_selectors
    from apps.agents import services as agent_services
    from apps.agents.models import Agent
    from apps.widget import services as widget_services

    olga = agent_services.create_human_agent(widget=widget, email="olga@example.com", name="Olga")
    agent_services.create_human_agent(widget=widget, email="ivan@example.com", name="Ivan")
    Agent.objects.create(widget=widget, name="Robo", type=Agent.Type.AI, status=Agent.Status.RELAXATION)
    monkeypatch.setattr(agent_selectors, "PRESENCE_SOURCE", lambda w: {olga.pk})
    widget_services.update_settings(widget=widget, body={"operators_display_mode": "all"})
    body = client.get(f"/api/visitor/v1/{widget.button_guid}/config").json()
    assert {(o["name"], o["presence"]) for o in body["operators"]} >= {
        ("Olga", "online"),
        ("Robo", "away"),
        ("Ivan", "offline"),
    }
    path = doc["paths"]["/api/visitor/v1/{button_guid}/config"]["get"]
    schema = path["responses"]["200"]["content"]["application/json"]["schema"]
    jsonschema.validate(body, {**schema, "components": doc["components"]}, cls=jsonschema.Draft202012Validator)
    operator = doc["components"]["schemas"]["VisitorHeaderOperatorDoc"]
    assert set(operator["properties"]) == set(body["operators"][0]) == {"name", "avatar_url", "kind", "presence"}


def test_visitor_answers_match_their_documented_shapes(client, widget, doc):
    """Real answers of the visitor API against the document's schemas (members and types)."""
    import jsonschema

    components = {"components": doc["components"]}

    def check(path: str, method: str, status: int, body: dict) -> None:
        schema = doc["paths"][path][method]["responses"][str(status)]["content"]["application/json"]["schema"]
        jsonschema.validate(body, {**schema, **components}, cls=jsonschema.Draft202012Validator)

    base = f"/api/visitor/v1/{widget.button_guid}"
    started = client.post(f"{base}/sessions", {"name": "Ann"}, content_type="application/json")
    assert started.status_code == 201
    check("/api/visitor/v1/{button_guid}/sessions", "post", 201, started.json())
    auth = {"HTTP_AUTHORIZATION": f"Visitor {started.json()['session_token']}"}
    sent = client.post(f"{base}/messages", {"type": "text", "body": "hello"}, content_type="application/json", **auth)
    assert sent.status_code == 201
    check("/api/visitor/v1/{button_guid}/messages", "post", 201, sent.json())
    listed = client.get(f"{base}/messages", **auth)
    check("/api/visitor/v1/{button_guid}/messages", "get", 200, listed.json())
    assert listed.json()["data"][0]["body"] == "hello"
    check("/api/visitor/v1/{button_guid}/config", "get", 200, client.get(f"{base}/config").json())
    typing = client.post(f"{base}/typing", {"state": "start"}, content_type="application/json", **auth)
    check("/api/visitor/v1/{button_guid}/typing", "post", 202, typing.json())
    check("/api/visitor/v1/{button_guid}/queue", "get", 200, client.get(f"{base}/queue", **auth).json())
    rated = client.post(f"{base}/rating", {"value": 5}, content_type="application/json", **auth)
    check("/api/visitor/v1/{button_guid}/rating", "post", 201, rated.json())
