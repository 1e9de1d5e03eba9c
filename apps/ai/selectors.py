"""Reads of the AI configuration, the payloads the API returns, and credential resolution (the one
function every provider caller uses to find the chain of ProviderConfig to try)."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, QuerySet, Subquery

from apps.agents.models import Agent
from apps.chats.models import Message
from apps.core.crypto import decrypt_secret
from apps.core.models import Widget
from apps.platform.statements import ModelStatement, Slot

from . import phrases
from .models import AiSettings, Assistant, Credential, IntegrationBinding, ReplyClaim
from .providers import endpoint_of

AGENT_TO_OPERATOR_STATUS = {
    Agent.Status.ACTIVE: "active",
    Agent.Status.RELAXATION: "paused",
    Agent.Status.BANNED: "retired",
}
MAX_CHAIN = 10


# --- settings ---------------------------------------------------------------------------------------------


def get_settings(widget: Widget) -> AiSettings:
    """The stored row, or an unsaved one with the defaults (reads never write)."""
    return AiSettings.objects.filter(widget=widget).first() or AiSettings(widget=widget)


def effective_assistant(widget: Widget) -> Assistant | None:
    """The default assistant when it is enabled, else the newest enabled one."""
    return Assistant.objects.filter(widget=widget, enabled=True).order_by("-is_default", "-created_at", "-id").first()


def offline_outcome_mode(row: AiSettings) -> str:
    """What the visitor gets on a handover nobody can take: the `handover_offline` phrase when
    presence is read (`presence_context_enabled`), else `handover_unknown`."""
    return "handover_offline" if row.presence_context_enabled else "handover_unknown"


def settings_payload(widget: Widget, *, assistant: Assistant | None = None) -> dict:
    row = get_settings(widget)
    effective = effective_assistant(widget)
    target = assistant or effective
    return {
        "enabled": row.enabled,
        "rag_enabled": row.rag_enabled,
        "shadow_mode": row.shadow_mode,
        "autonomous_tuning_enabled": row.autonomous_tuning_enabled,
        "presence_context_enabled": row.presence_context_enabled,
        "takeover_timeout_sec": row.takeover_timeout_sec,
        "handover_summary": row.handover_summary,
        "offline_outcome_mode": offline_outcome_mode(row),
        "effective_assistant": {"id": effective.pk, "name": effective.name} if effective else None,
        "legacy_persona": row.legacy_persona or None,
        "learning_target": learning_target(target),
    }


def learning_target(assistant: Assistant | None) -> dict | None:
    """The `learning_target` member of the AI settings and of the learning control panel."""
    return {"assistant_id": assistant.pk, "name": assistant.name} if assistant else None


def phrases_payload(widget: Widget) -> dict:
    return phrases.resolved(get_settings(widget).phrases or {})


# --- assistants and operators -----------------------------------------------------------------------------


def assistant_payload(assistant: Assistant) -> dict:
    return {
        "id": assistant.pk,
        "name": assistant.name,
        "enabled": assistant.enabled,
        "is_default": assistant.is_default,
        "persona": assistant.persona,
        "system_prompt": assistant.system_prompt,
        "temperature": assistant.temperature,
        "rag_enabled": assistant.rag_enabled,
        "cite_sources": assistant.cite_sources,
        "escalation_triggers": list(assistant.escalation_triggers),
        "greeting": assistant.greeting,
        "quick_phrases": list(assistant.quick_phrases),
        "greeting_i18n": dict(assistant.greeting_i18n),
        "quick_phrases_i18n": dict(assistant.quick_phrases_i18n),
        "provider": assistant.provider or None,
        "model": assistant.model or None,
        "created_at": assistant.created_at.isoformat(),
        "updated_at": assistant.updated_at.isoformat(),
    }


def ai_operators(widget: Widget) -> QuerySet[Agent]:
    return Agent.objects.filter(widget=widget, type=Agent.Type.AI)


def operators_of(widget: Widget, assistant: Assistant) -> QuerySet[Agent]:
    return ai_operators(widget).filter(ai_assistant_id=assistant.pk)


def running_operators(widget: Widget, assistant: Assistant) -> QuerySet[Agent]:
    """The AI operators that are not retired and answer with `assistant`: it is not deleted while any does."""
    return operators_of(widget, assistant).exclude(status=Agent.Status.BANNED).order_by("id")


def operator_payload(agent: Agent) -> dict:
    return {
        "id": agent.pk,
        "type": "ai",
        "assistant_id": agent.ai_assistant_id,
        "name": agent.name,
        "show_in_header": agent.show_in_header,
        "status": AGENT_TO_OPERATOR_STATUS[agent.status],
        "created_at": agent.created_at.isoformat(),
    }


# --- credentials ------------------------------------------------------------------------------------------


def answers_visitors(widget: Widget) -> bool:
    """Whether the built-in AI answers the widget's visitors now: the AI switch is on, an effective
    assistant has an active AI operator (the one apps.ai.runtime.active_operator picks) and a
    provider credential resolves for it. The visitor config's `online` reads this (through the hook
    apps.ai registers with the visitor API); no provider is called. In shadow mode the AI's answers
    are private notes: it answers no visitor."""
    ai_settings = get_settings(widget)
    if not ai_settings.enabled or ai_settings.shadow_mode:
        return False
    assistant = effective_assistant(widget)
    if assistant is None:
        return False
    operator = operators_of(widget, assistant).filter(status=Agent.Status.ACTIVE).order_by("id").first()
    return operator is not None and resolve_credential(widget, operator=operator, assistant=assistant) is not None


def active_credentials(widget: Widget) -> QuerySet[Credential]:
    return Credential.objects.filter(widget=widget, is_active=True).order_by("-created_at", "-id")


def widget_wide_credential(widget: Widget, provider: str | None = None) -> Credential | None:
    qs = active_credentials(widget).filter(assistant__isnull=True, operator__isnull=True)
    if provider:
        qs = qs.filter(provider=provider)
    return qs.first()


def has_widget_wide_credential(widget: Widget) -> bool:
    return widget_wide_credential(widget) is not None


def credential_scope(credential: Credential) -> str:
    if credential.operator_id is not None:
        return "operator"
    if credential.assistant_id is not None:
        return "assistant"
    return "widget"


def backup_chain(credential: Credential, by_id: dict[int, Credential]) -> list[dict]:
    """The declared backups in the order they are tried (`by_id`: the widget's credentials)."""
    out, seen = [], {credential.pk}
    node = by_id.get(credential.backup_credential_id)
    while node is not None and node.pk not in seen and len(out) < MAX_CHAIN:
        seen.add(node.pk)
        out.append({"id": node.pk, "provider": node.provider, "model": node.model or None, "is_active": node.is_active})
        node = by_id.get(node.backup_credential_id)
    return out


def credential_map(widget: Widget) -> dict[int, Credential]:
    """Every credential of the widget by id (a widget holds a handful): chains resolve from it
    without a query per link."""
    return {c.pk: c for c in Credential.objects.filter(widget=widget)}


def credential_payload(credential: Credential, by_id: dict[int, Credential]) -> dict:
    return {
        "id": credential.pk,
        "provider": credential.provider,
        "base_url": credential.base_url or None,
        "endpoint": endpoint_of(credential.provider, credential.base_url),
        "model": credential.model or None,
        "embedding_model": credential.embedding_model or None,
        "is_active": credential.is_active,
        "scope": credential_scope(credential),
        "assistant_id": credential.assistant_id,
        "operator_id": credential.operator_id,
        "backup_credential_id": credential.backup_credential_id,
        "backup_chain": backup_chain(credential, by_id),
        "has_api_key": bool(credential.api_key_encrypted),
        "has_signing_secret": bool(credential.signing_secret_encrypted),
        "created_at": credential.created_at.isoformat(),
        "updated_at": credential.updated_at.isoformat(),
    }


def resolve_credential(
    widget: Widget,
    *,
    operator: Agent | None = None,
    assistant: Assistant | None = None,
    by_id: dict[int, Credential] | None = None,
) -> Credential | None:
    """product-decisions "AI providers": the operator's credential, else its assistant's, else the
    widget-wide one of the assistant's `provider`, else the newest active widget-wide one. One query
    (the widget's credentials; `by_id` when the caller has them)."""
    if by_id is None:
        by_id = credential_map(widget)
    active = sorted((c for c in by_id.values() if c.is_active), key=lambda c: (c.created_at, c.pk), reverse=True)
    wide = [c for c in active if c.assistant_id is None and c.operator_id is None]
    candidates = []
    if operator is not None:
        candidates += [c for c in active if c.operator_id == operator.pk]
    if assistant is not None:
        candidates += [c for c in active if c.assistant_id == assistant.pk]
        if assistant.provider:
            candidates += [c for c in wide if c.provider == assistant.provider]
    candidates += wide
    return candidates[0] if candidates else None


def credential_chain(
    widget: Widget, primary: Credential, by_id: dict[int, Credential] | None = None
) -> list[Credential]:
    """`primary` then its active declared backups, in order, each once."""
    if by_id is None:
        by_id = credential_map(widget)
    chain, seen, node = [], set(), primary
    while node is not None and node.pk not in seen and len(chain) < MAX_CHAIN:
        seen.add(node.pk)
        if node.is_active:
            chain.append(node)
        node = by_id.get(node.backup_credential_id)
    return chain


def provider_config(credential: Credential, *, assistant: Assistant | None = None):
    """The driver's view of a credential (decrypted key). The assistant's `model` applies when the
    credential names none and the assistant targets this driver (or no driver)."""
    from .providers import ProviderConfig

    model = credential.model or None
    if model is None and assistant is not None and assistant.model and assistant.provider in ("", credential.provider):
        model = assistant.model
    return ProviderConfig(
        provider=credential.provider,
        api_key=decrypt_secret(credential.api_key_encrypted) or "",
        base_url=credential.base_url or None,
        model=model,
        credential_id=credential.pk,
        options={"embedding_model": credential.embedding_model} if credential.embedding_model else {},
    )


def resolve_chain(widget: Widget, *, operator: Agent | None = None, assistant: Assistant | None = None) -> list:
    """The chain of ProviderConfig to try for this operator/assistant (empty: nothing resolves)."""
    by_id = credential_map(widget)
    primary = resolve_credential(widget, operator=operator, assistant=assistant, by_id=by_id)
    if primary is None:
        return []
    return [provider_config(c, assistant=assistant) for c in credential_chain(widget, primary, by_id)]


# --- the integration binding ------------------------------------------------------------------------------


def get_binding(widget: Widget) -> IntegrationBinding | None:
    return IntegrationBinding.objects.filter(widget=widget).first()


def binding_payload(binding: IntegrationBinding, *, turn_endpoint: str) -> dict:
    return {
        "provider": binding.provider,
        "api_token_id": binding.api_token_id,
        "assistant_id": binding.assistant_id,
        "turn_endpoint": turn_endpoint,
        "has_secret": bool(binding.secret_encrypted),
        "created_at": binding.created_at.isoformat(),
    }


def get_signing_binding(widget: Widget) -> tuple[int, str] | None:
    """For the signed application-assistant endpoints: the bound token's id and the secret, or
    None when the widget has no binding (or its token was revoked)."""
    binding = IntegrationBinding.objects.select_related("api_token").filter(widget=widget).first()
    if binding is None or binding.api_token.is_revoked:
        return None
    secret = decrypt_secret(binding.secret_encrypted)
    if secret is None:
        return None
    return binding.api_token_id, secret


# --- the answer's reads ----------------------------------------------------------------------------------


def newer_visitor_messages(chat_id, widget_id, message_id) -> QuerySet:
    """The visitor messages of the chat after `message_id` (values or expressions: OuterRef, Slot)."""
    return Message.objects.filter(
        chat_id=chat_id, widget_id=widget_id, author_kind=Message.Author.CLIENT, id__gt=message_id
    )


def _answerable_message():
    return (
        Message.objects.select_related("chat", "chat__widget", "chat__contact", "chat__handled_by")
        .annotate(
            newer_exists=Exists(newer_visitor_messages(OuterRef("chat_id"), OuterRef("widget_id"), OuterRef("pk"))),
            # The AI configuration's version: the configuration itself comes from the process's copy.
            ai_config_version=Subquery(
                AiSettings.objects.filter(widget_id=OuterRef("widget_id")).values("config_version")[:1]
            ),
        )
        .filter(pk=Slot("message", Message._meta.pk))
        # A contact whose erasure was accepted reads as missing: nothing of it goes to a provider.
        .live()
    )


# Every answer starts with it: compiled once.
_ANSWERABLE_MESSAGE = ModelStatement(_answerable_message)


def answerable_message(message_id: int) -> Message | None:
    """The message with its chat, the chat's widget, contact and handler, `newer_exists` (a newer
    visitor message of the chat) and `ai_config_version` (the widget's AI settings' version, None
    without settings); None when there is no such message or its contact's erasure was accepted."""
    found = _ANSWERABLE_MESSAGE.instances(message=message_id)
    return found[0] if found else None


def _held_claim():
    ai_row = AiSettings.objects.filter(widget_id=Slot("widget", Widget._meta.pk))
    return (
        ReplyClaim.objects.select_for_update()
        .filter(pk=Slot("claim", ReplyClaim._meta.pk), token=Slot("token", ReplyClaim._meta.get_field("token")))
        .annotate(
            newer_exists=Exists(
                newer_visitor_messages(
                    Slot("chat", Message._meta.get_field("chat").target_field),
                    Slot("widget", Widget._meta.pk),
                    Slot("message", Message._meta.pk),
                )
            ),
            ai_enabled=Subquery(ai_row.values("enabled")[:1]),
            ai_shadow=Subquery(ai_row.values("shadow_mode")[:1]),
        )
    )


# Every answer ends with it, under the chat's lock: compiled once.
_HELD_CLAIM = ModelStatement(_held_claim)


def held_claim(claim: ReplyClaim, message: Message) -> ReplyClaim | None:
    """The claim locked until the transaction ends, if it still holds its token, with `newer_exists`
    (a visitor message of the chat newer than `message`), and the widget's AI switch and shadow mode
    as they stand now (`ai_enabled`, `ai_shadow`); None when another worker took it over."""
    found = _HELD_CLAIM.instances(
        claim=claim.pk, token=claim.token, chat=message.chat_id, widget=message.widget_id, message=message.pk
    )
    return found[0] if found else None
