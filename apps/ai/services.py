"""Writes of the AI configuration: settings and phrases, assistants, AI operators, credentials,
alerts, marketplace applies and the integration binding.

Every function takes the tenant first and asserts the rows it is given belong to it. Rows two
writers race on (the settings row, the default assistant, the widget-wide credential of a driver,
the binding) are written under `select_for_update` of the settings row, the widget's AI lock.
"""

from __future__ import annotations

import secrets
import string

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.agents.models import Agent
from apps.audit import services as audit
from apps.core import events
from apps.core.crypto import encrypt_secret
from apps.core.errors import MissingScope, ValidationFailed
from apps.core.models import ApiToken, Widget
from apps.core.ratelimit import Budget
from apps.platform import outbound
from apps.platform.numbers import MAX_ID

from . import config, detached, marketplace, phrases, provider_models, selectors

# What the apps above the AI runtime use of it (external operators, self-learning, the console's
# suggestion): the hand-over, the platform's safety floors, the provider call and the answerer hook.
from .assist import suggest_reply as suggest_reply
from .errors import (
    AssistantInUse,
    CredentialConflict,
    CredentialUnavailable,
    IntegrationExists,
    NothingToMigrate,
)
from .errors import TestCredentialUnavailable as TestCredentialUnavailable
from .handoff import hand_to_people as hand_to_people
from .handoff import machine_may_answer as machine_may_answer
from .handoff import post_as_operator as post_as_operator
from .models import PROVIDERS, AiSettings, Alert, Assistant, Credential, IntegrationBinding
from .operators import OPERATOR_STATUS_TO_AGENT as OPERATOR_STATUS_TO_AGENT
from .operators import create_operator as create_operator
from .operators import retire_operator as retire_operator
from .operators import update_operator as update_operator
from .providers import ChatMessage as ChatMessage
from .providers import ProviderError as ProviderError
from .providers import complete as complete
from .reply_safety import check_reply as check_reply
from .reply_safety import leaks_secret as leaks_secret
from .reply_safety import reason as reason
from .reply_safety import skeleton as skeleton

# What the owner's settings pages (apps.console) run beside the API: the detached test in its phases
# (prepared, the provider awaited, recorded), a credential's live model list, the templates' listing.
DetachedTestInput = detached.TestInput
prepare_detached_test = detached.prepare
run_detached_provider = detached.run_provider
detached_result = detached.result
detached_provider_error = detached.provider_error
record_detached_result = detached.record_result
release_detached_slot = detached.release_slot
list_credential_models = provider_models.list_models
template_listing = marketplace.listing

TEMPLATE_APPLY_BUDGET = Budget("ai_template_apply", 5, 3600)
SECRET_ALPHABET = string.ascii_letters + string.digits
SECRET_LENGTH = 48


# --- settings and phrases ---------------------------------------------------------------------------------


def lock_settings(widget: Widget) -> AiSettings:
    """The widget's settings row, locked; created on first use. Must run in a transaction."""
    AiSettings.objects.get_or_create(widget=widget)
    return AiSettings.objects.select_for_update().get(widget=widget)


@transaction.atomic
def update_settings(*, widget: Widget, changes: dict) -> AiSettings:
    row = lock_settings(widget)
    changed = [name for name, value in changes.items() if getattr(row, name) != value]
    before = audit.values(row)
    for name in changed:
        setattr(row, name, changes[name])
    if "enabled" in changed and row.enabled:
        row.enabled_at = timezone.now()
        changed.append("enabled_at")
    if changed:
        row.save(update_fields=[*changed, "updated_at"])
        config.bump(widget.pk)
        audit.record_change(
            widget=widget,
            action="ai_settings.changed",
            target_type="ai_settings",
            before=before,
            after=audit.values(row),
        )
        events.emit(widget, events.WIDGET_CONFIG_CHANGED)
    return row


@transaction.atomic
def delete_settings(*, widget: Widget) -> None:
    """Django admin's deletion of the widget's settings row (the defaults apply from the next use):
    audited, and the widget's config event emitted as after a PATCH, so who answers its visitors is
    purged from the served config at once."""
    row = AiSettings.objects.select_for_update().filter(widget=widget).first()
    if row is None:
        return
    before, pk = audit.values(row), row.pk
    row.delete()  # with the row goes its version: a task reads none, and the AI is off
    audit.record_change(
        widget=widget,
        action="ai_settings.deleted",
        target_type="ai_settings",
        target_id=pk,
        before=before,
        after={},
        always=True,
    )
    events.emit(widget, events.WIDGET_CONFIG_CHANGED)


@transaction.atomic
def migrate_legacy_settings(*, widget: Widget) -> tuple[Assistant, bool]:
    """Seed an assistant from the legacy persona, system prompt and greeting. Additive (never
    changes an existing assistant) and repeatable: while an assistant seeded from the same legacy
    values exists it is returned and nothing is created."""
    row = lock_settings(widget)
    seed = {
        "persona": row.legacy_persona,
        "system_prompt": row.legacy_system_prompt,
        "greeting": row.legacy_greeting,
    }
    if not any(seed.values()):
        raise NothingToMigrate("There is no legacy persona, system prompt or greeting to migrate.")
    existing = Assistant.objects.filter(widget=widget, origin="legacy", **seed).order_by("-id").first()
    if existing is not None:
        return existing, False
    has_default = Assistant.objects.filter(widget=widget, is_default=True).exists()
    assistant = Assistant.objects.create(
        widget=widget, name="Assistant", origin="legacy", is_default=not has_default, **seed
    )
    config.bump(widget.pk)
    return assistant, True


def _check_phrase_values(body: dict) -> dict:
    """{key: {lang: text|None}|None} -> the same with texts cleaned; 422 naming every bad path."""
    errors, out = {}, {}
    for key, langs in body.items():
        if langs is None:
            out[key] = None
            continue
        out[key] = {}
        for lang, text in langs.items():
            if text is None:
                out[key][lang] = None
                continue
            if len(text) > phrases.MAX_LENGTH:
                errors[f"{key}.{lang}"] = [f"At most {phrases.MAX_LENGTH} characters."]
                continue
            cleaned = phrases.clean_override(text)
            if not cleaned:
                errors[f"{key}.{lang}"] = ["Empty after removing tags and control characters."]
                continue
            out[key][lang] = cleaned
    if errors:
        raise ValidationFailed(errors=errors)
    return out


@transaction.atomic
def patch_phrases(*, widget: Widget, body: dict) -> AiSettings:
    """Merge: a text sets one override, `{key: {lang: null}}` resets one language, `{key: null}`
    every language of the key; what is not named is kept."""
    values = _check_phrase_values(body)
    row = lock_settings(widget)
    stored = {k: dict(v) for k, v in (row.phrases or {}).items()}
    for key, langs in values.items():
        if langs is None:
            stored.pop(key, None)
            continue
        mine = stored.setdefault(key, {})
        for lang, text in langs.items():
            if text is None:
                mine.pop(lang, None)
            else:
                mine[lang] = text
        if not mine:
            stored.pop(key)
    row.phrases = stored
    row.save(update_fields=["phrases", "updated_at"])
    config.bump(widget.pk)
    return row


def phrase_overrides(body: dict) -> dict:
    """The stored overrides of a complete override set (PUT's body, or Django admin's field): texts
    cleaned, 422 naming every bad path; null languages and empty keys dropped."""
    values = _check_phrase_values(body)
    return {
        key: {lang: text for lang, text in langs.items() if text is not None}
        for key, langs in values.items()
        if langs and any(text is not None for text in langs.values())
    }


@transaction.atomic
def replace_phrases(*, widget: Widget, body: dict) -> AiSettings:
    """PUT: the body is the complete override set; omitted keys and languages are cleared."""
    overrides = phrase_overrides(body)
    row = lock_settings(widget)
    row.phrases = overrides
    row.save(update_fields=["phrases", "updated_at"])
    config.bump(widget.pk)
    return row


# --- assistants -------------------------------------------------------------------------------------------


def _clear_other_defaults(widget: Widget, keep: Assistant | None) -> None:
    qs = Assistant.objects.filter(widget=widget, is_default=True)
    if keep is not None and keep.pk:
        qs = qs.exclude(pk=keep.pk)
    qs.update(is_default=False)


@transaction.atomic
def create_assistant(*, widget: Widget, fields: dict, origin: str = "") -> Assistant:
    lock_settings(widget)
    if fields.get("is_default"):
        _clear_other_defaults(widget, None)
    assistant = Assistant.objects.create(widget=widget, origin=origin, **fields)
    config.bump(widget.pk)
    _audit_assistant(widget, assistant.pk, None, audit.values(assistant))
    events.emit(widget, events.WIDGET_CONFIG_CHANGED)
    return assistant


ASSISTANT_AUDIT = "assistant"  # audit rows: assistant.created, .changed, .deleted
# The prompt's words stay out of the log: a change reads "[changed]".
ASSISTANT_PROMPTS = ("system_prompt", "persona")


def _audit_assistant(widget: Widget, pk: int, before: dict | None, after: dict | None) -> None:
    audit.record_row(
        widget=widget, target_type=ASSISTANT_AUDIT, target_id=pk, before=before, after=after, texts=ASSISTANT_PROMPTS
    )


@transaction.atomic
def update_assistant(*, widget: Widget, assistant: Assistant, changes: dict) -> Assistant:
    lock_settings(widget)
    assistant = Assistant.objects.select_for_update().get(pk=assistant.pk, widget=widget)
    if changes.get("is_default"):
        _clear_other_defaults(widget, assistant)
    before = audit.values(assistant)
    for name, value in changes.items():
        setattr(assistant, name, value)
    assistant.save()
    config.bump(widget.pk)
    _audit_assistant(widget, assistant.pk, before, audit.values(assistant))
    events.emit(widget, events.WIDGET_CONFIG_CHANGED)
    return assistant


@transaction.atomic
def delete_assistant(*, widget: Widget, assistant: Assistant) -> None:
    """Refused (409, naming them) while an AI operator that is not retired runs it."""
    lock_settings(widget)
    running = list(selectors.running_operators(widget, assistant).values("id", "name"))
    if running:
        raise AssistantInUse(
            "AI operators still run this assistant: " + ", ".join(f"{o['name']} ({o['id']})" for o in running) + ".",
            operators=running,
        )
    before, pk = audit.values(assistant), assistant.pk
    assistant.delete()
    config.bump(widget.pk)
    _audit_assistant(widget, pk, before, None)
    events.emit(widget, events.WIDGET_CONFIG_CHANGED)


# --- credentials ------------------------------------------------------------------------------------------

BASE_URL_REFUSED = (
    "The host does not resolve to a public address (a model server on a private network must be listed "
    "in the operator's AI_PRIVATE_HOSTS)."
)


BASE_URL_QUERY = "A base_url takes no query (?...) or fragment (#...): give the scheme, host, port and path only."


def check_base_url(url: str) -> str:
    """https, no user:pass, a public address (loopback only with OUTBOUND_ALLOW_LOOPBACK), or the
    owner's model server listed in AI_PRIVATE_HOSTS (`http://` allowed there only), checked once at
    save time through the one address policy. Returns the URL without a trailing slash."""
    if "?" in url or "#" in url:
        # The drivers append the API's paths to base_url: a query or fragment would carry them off
        # (`http://host/x?` turns every path into a query of /x), away from what the owner checked.
        raise ValidationFailed(errors={"base_url": [BASE_URL_QUERY]})
    private = outbound.ai_private_hosts()
    try:
        parts = outbound.check_url(url, private_hosts=private)
    except outbound.OutboundBlocked as exc:
        raise ValidationFailed(errors={"base_url": [f"Refused endpoint ({exc.reason})."]}) from None
    try:
        port = parts.port or (80 if parts.scheme.lower() == "http" else 443)
        outbound.pin_address(parts.hostname, port, private_hosts=private)
    except (outbound.OutboundBlocked, outbound.OutboundError):
        raise ValidationFailed(errors={"base_url": [BASE_URL_REFUSED]}) from None
    return url.rstrip("/")


def check_credential_links(
    *, widget: Widget, assistant: Assistant | None, operator: Agent | None, backup: Credential | None
) -> None:
    """The assistant, AI operator and backup a credential names belong to its widget (the API
    resolves them inside the tenant; the admin's form names any row, so the rule is here too)."""
    if assistant is not None and assistant.widget_id != widget.pk:
        raise ValidationFailed(errors={"assistant_id": ["No such assistant in this widget."]})
    if operator is not None and (operator.widget_id != widget.pk or operator.type != Agent.Type.AI):
        raise ValidationFailed(errors={"operator_id": ["No such AI operator in this widget."]})
    if backup is not None and backup.widget_id != widget.pk:
        raise ValidationFailed(errors={"backup_credential_id": ["No such credential in this widget."]})
    if assistant is not None and operator is not None:
        raise ValidationFailed(errors={"operator_id": ["Give assistant_id or operator_id, not both."]})


def _check_backup(widget: Widget, credential: Credential | None, backup: Credential | None) -> None:
    if backup is None:
        return
    seen = {credential.pk} if credential is not None and credential.pk else set()
    node = backup
    while node is not None:
        if node.pk in seen:
            raise ValidationFailed(errors={"backup_credential_id": ["This backup would make a cycle."]})
        seen.add(node.pk)
        node = Credential.objects.filter(widget=widget, pk=node.backup_credential_id).first()


def _save_credential(credential: Credential) -> Credential:
    try:
        with transaction.atomic():
            credential.save()
    except IntegrityError:
        raise CredentialConflict(
            f"An active widget-wide {credential.provider} credential already exists; retire it first."
        ) from None
    config.bump(credential.widget_id)
    return credential


@transaction.atomic
def delete_credential(*, widget: Widget, credential: Credential) -> None:
    """Django admin's deletion of a credential (the API retires one with `is_active` instead)."""
    before, pk = audit.values(credential), credential.pk
    Credential.objects.filter(pk=pk, widget=widget).delete()
    config.bump(widget.pk)
    audit.record_change(
        widget=widget,
        action="ai_credential.deleted",
        target_type="ai_credential",
        target_id=pk,
        before=before,
        after={},
        always=True,
    )


@transaction.atomic
def create_credential(*, widget: Widget, data: dict) -> Credential:
    lock_settings(widget)
    provider = data["provider"]
    base_url = data.get("base_url") or ""
    if base_url:
        base_url = check_base_url(base_url)
    elif provider == "openai_compatible":
        raise ValidationFailed(errors={"base_url": ["The openai_compatible driver needs base_url."]})
    credential = Credential(
        widget=widget,
        provider=provider,
        api_key_encrypted=encrypt_secret(data["api_key"]),
        base_url=base_url,
        model=data.get("model") or "",
        embedding_model=data.get("embedding_model") or "",
        signing_secret_encrypted=encrypt_secret(data["signing_secret"]) if data.get("signing_secret") else "",
        is_active=data.get("is_active", True),
        assistant=data.get("assistant"),
        operator=data.get("operator"),
        backup_credential=data.get("backup_credential"),
    )
    check_credential_links(
        widget=widget, assistant=credential.assistant, operator=credential.operator, backup=credential.backup_credential
    )
    _check_backup(widget, None, credential.backup_credential)
    credential = _save_credential(credential)
    audit.record_change(
        widget=widget,
        action="ai_credential.created",
        target_type="ai_credential",
        target_id=credential.pk,
        before={},
        after=audit.values(credential),
        always=True,
    )
    return credential


@transaction.atomic
def update_credential(*, widget: Widget, credential: Credential, changes: dict) -> Credential:
    """Rotate (`api_key`, `signing_secret`), retire or revive (`is_active`), repoint (`base_url`,
    `model`, `embedding_model`, scope, `backup_credential_id`). `provider` is immutable (refused by the input)."""
    lock_settings(widget)
    credential = Credential.objects.select_for_update().get(pk=credential.pk, widget=widget)
    before = audit.values(credential)
    apply_credential_changes(widget=widget, credential=credential, changes=changes)
    credential = _save_credential(credential)
    action = "ai_credential.retired" if before["is_active"] and not credential.is_active else "ai_credential.changed"
    audit.record_change(
        widget=widget,
        action=action,
        target_type="ai_credential",
        target_id=credential.pk,
        before=before,
        after=audit.values(credential),
    )
    return credential


NEW_ADDRESS_NEEDS_KEY = "A new base_url takes the api_key again: the stored key is never sent to another address."


def apply_credential_changes(*, widget: Widget, credential: Credential, changes: dict) -> Credential:
    """`changes` applied to `credential` in memory through every save-time check (the address
    guard on `base_url`, links inside the widget, no backup cycle); nothing is saved. The API's
    PATCH and the admin's credential form both go through it."""
    if "base_url" in changes:
        url = changes["base_url"] or ""
        if url:
            url = check_base_url(url)
        elif credential.provider == "openai_compatible":
            raise ValidationFailed(errors={"base_url": ["The openai_compatible driver needs base_url."]})
        # SECURITY: the stored key is write-only, and base_url is where it is sent: a writer who
        # does not know the key could otherwise repoint the credential and receive it.
        if url != credential.base_url and credential.api_key_encrypted and not changes.get("api_key"):
            raise ValidationFailed(errors={"api_key": [NEW_ADDRESS_NEEDS_KEY]})
        credential.base_url = url
    if "api_key" in changes:
        credential.api_key_encrypted = encrypt_secret(changes["api_key"])
    if "signing_secret" in changes:
        secret = changes["signing_secret"]
        credential.signing_secret_encrypted = encrypt_secret(secret) if secret else ""
    for name in ("model", "embedding_model"):
        if name in changes:
            setattr(credential, name, changes[name] or "")
    for name in ("is_active", "assistant", "operator"):
        if name in changes:
            setattr(credential, name, changes[name])
    if "backup_credential" in changes:
        credential.backup_credential = changes["backup_credential"]
    check_credential_links(
        widget=widget, assistant=credential.assistant, operator=credential.operator, backup=credential.backup_credential
    )
    if "backup_credential" in changes:
        _check_backup(widget, credential, credential.backup_credential)
    return credential


# --- alerts -----------------------------------------------------------------------------------------------


@transaction.atomic
def acknowledge_alerts(*, widget: Widget, ids: list[int] | None) -> list[int]:
    """Acknowledge the named alerts (all of this widget; already acknowledged ones stay as they
    were) or, with `ids` None, every outstanding one. Returns the ids acknowledged now."""
    qs = Alert.objects.select_for_update().filter(widget=widget, acknowledged_at__isnull=True)
    if ids is not None:
        # An id past MAX_ID names no row; it is left out of the query (SQLite cannot bind it).
        storable = [i for i in ids if i <= MAX_ID]
        known = set(Alert.objects.filter(widget=widget, pk__in=storable).values_list("pk", flat=True))
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise ValidationFailed(errors={"ids": [f"Unknown alert ids: {', '.join(map(str, unknown))}."]})
        qs = qs.filter(pk__in=ids)
    done = sorted(qs.values_list("pk", flat=True))
    Alert.objects.filter(pk__in=done).update(acknowledged_at=timezone.now())
    return done


# --- marketplace ------------------------------------------------------------------------------------------


@transaction.atomic
def apply_template(*, widget: Widget, slug: str, locale: str) -> Assistant:
    """A NEW assistant from the template (never the default, never changing another); 5 per hour
    per widget."""
    template = marketplace.BY_SLUG[slug]
    TEMPLATE_APPLY_BUDGET.check(widget.pk, detail="At most 5 template applies per hour per widget.")
    text = template[locale]
    return create_assistant(
        widget=widget,
        origin=f"template:{slug}",
        fields={
            "name": text["name"],
            "persona": text["persona"],
            "system_prompt": text["system_prompt"],
            "greeting": text["greeting"],
            "quick_phrases": list(text["quick_phrases"]),
            "escalation_triggers": marketplace.effective_triggers(template, locale),
            "temperature": template["temperature"],
        },
    )


# --- the integration binding ------------------------------------------------------------------------------


def generate_signing_secret() -> str:
    return "".join(secrets.choice(SECRET_ALPHABET) for _ in range(SECRET_LENGTH))


@transaction.atomic
def bind_integration(
    *, widget: Widget, token: ApiToken, provider: str, assistant: Assistant | None = None
) -> tuple[IntegrationBinding, str]:
    """The calling token becomes the only signer. Needs the token to hold ai:write too, and an
    active credential: the assistant's when one is given, else an unowned (widget-wide) one of the
    driver. One binding per widget (409); DELETE then POST rotates. Returns the secret once."""
    assert token.widget_id == widget.pk and provider in PROVIDERS
    if "ai:write" not in (token.scopes or []):
        raise MissingScope("The binding's token must also hold ai:write.", required_scopes=["ai:write"])
    lock_settings(widget)
    if IntegrationBinding.objects.filter(widget=widget).exists():
        raise IntegrationExists("The widget already has an integration binding; DELETE it first to rotate.")
    if assistant is not None:
        credential = selectors.active_credentials(widget).filter(assistant=assistant, provider=provider).first()
    else:
        credential = selectors.widget_wide_credential(widget, provider)
    if credential is None:
        raise CredentialUnavailable(f"No active unowned {provider} credential (or of the assistant) exists.")
    secret = generate_signing_secret()
    binding = IntegrationBinding.objects.create(
        widget=widget,
        provider=provider,
        api_token=token,
        assistant=assistant,
        credential=credential,
        secret_encrypted=encrypt_secret(secret),
    )
    return binding, secret


@transaction.atomic
def unbind_integration(*, widget: Widget) -> bool:
    deleted, _ = IntegrationBinding.objects.filter(widget=widget).delete()
    return bool(deleted)
