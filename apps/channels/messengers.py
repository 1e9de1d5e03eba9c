"""Messenger providers: reads, connect (PUT), verify, disconnect (DELETE), the inbound hooks and
long polling. Every provider is reached through `providers.registry` (its hooks), never by its code.

PUT runs in the spec's order: the read-only probe of the credential (`Provider.probe`: Telegram
`getMe` only; a real rejection is 422 and stores nothing), then the local write (committed), then
the provider webhook registration (`Provider.register`: `setWebhook`, Viber `set_webhook`, OK.ru
`me/subscribe`, Max `POST /subscriptions`, Cian `subscribe-webhook`, AliExpress's unverified
subscribe; `wa`, `fb`, `apple` have none), whose failure leaves the credential saved and inbound not
live (retry with verify). DELETE tries the provider-side removal first (`Provider.unregister`: `tg`
deleteWebhook, `cian` unsubscribe-webhook; short deadline) and never lets it block. Connecting
and verifying need a paid plan; removing never does. Requests to these routes count 10 per minute
per widget (sliding window) before any provider is called. Every successful write purges the
widget cache (widget.config_changed).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import secrets
import unicodedata
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.audit import services as audit
from apps.billing import selectors as billing
from apps.chats import services as chat_services
from apps.chats.models import Message
from apps.core import crypto, events
from apps.core.errors import AppError, Conflict, NotFound, ValidationFailed
from apps.core.models import Widget
from apps.core.ratelimit import Budget
from apps.webhooks import services as webhooks

from . import selectors
from .models import InboundUpdate, MessengerConnection
from .providers import registry
from .providers.base import HOOK_MESSAGES_LIMIT, HookAccount, HookRequest, Inbound, Provider, stored_credential
from .services import deactivate_custom_channels, link_external_contact

logger = logging.getLogger(__name__)

# `custom` is the widget's custom channels (their own routes), listed with the providers.
CUSTOM = "custom"
PROVIDERS = (*registry.PROVIDERS, CUSTOM)
PROVIDER_CALLS = Budget("messenger_provider_calls", 10, 60)


class NotWritable(ValidationFailed):
    code, title = "not_writable", "This provider is not writable"


class PlanRequired(Conflict):
    code, title = "plan_required", "A paid plan is required"


class NotConnected(Conflict):
    code, title = "not_connected", "Nothing is stored for this provider"


class CredentialRejected(ValidationFailed):
    code, title = "credential_rejected", "The provider rejected the credential"


class HookUnauthorized(AppError):
    status, code, title = 401, "invalid_signature", "The provider's signature or secret does not match"


@dataclass(frozen=True)
class WebhookOutcome:
    attempted: bool
    status: str
    detail: str = ""

    def as_dict(self) -> dict:
        out: dict = {"attempted": self.attempted, "status": self.status}
        if self.detail:
            out["detail"] = self.detail
        return out


# Audit rows: messenger_connection.created, .changed (a credential replaced), .deleted; the
# credentials show as "[hidden]".
AUDIT_TARGET = "messenger_connection"


def audited(conn: MessengerConnection) -> dict:
    return {"provider": conn.provider, "token": conn.token_encrypted, "sid": conn.sid_encrypted, "url": conn.url}


# --- reads ----------------------------------------------------------------------------------------


def provider_row(widget: Widget, provider: str, stored: MessengerConnection | None) -> dict:
    """`{provider, connected, writable, has_token, has_sid?}`: never a secret or a hook URL."""
    found = registry.get(provider)
    if found is None:  # custom channels
        connected = selectors.has_active_custom_channel(widget)
        return {"provider": provider, "connected": connected, "writable": False, "has_token": False}
    connected = found.connected(widget.pk, stored)
    row = {"provider": provider, "connected": connected, "writable": found.writable, "has_token": connected}
    if "sid" in found.fields:
        row["has_sid"] = stored is not None and bool(stored.sid_encrypted)
    return row


def list_rows(widget: Widget) -> list[dict]:
    stored = {c.provider: c for c in MessengerConnection.objects.filter(widget=widget)}
    return [provider_row(widget, p, stored.get(p)) for p in PROVIDERS]


def get_row(widget: Widget, provider: str) -> dict:
    if provider not in PROVIDERS:
        raise NotFound("No such provider.")
    return provider_row(widget, provider, MessengerConnection.objects.filter(widget=widget, provider=provider).first())


# --- guards ---------------------------------------------------------------------------------------


def check_provider_budget(widget: Widget) -> None:
    """10 provider-calling requests per minute per widget; refused ones reach no provider (429)."""
    PROVIDER_CALLS.check(widget.pk, detail="At most 10 provider calls per minute per widget.")


def check_hook_budget(conn: MessengerConnection) -> None:
    """MESSENGER_HOOK_CALLS_PER_MINUTE hook calls per connection (sliding 60 s; 0: no limit), spent
    before the body is read: a refused call is 429 with Retry-After, nothing parsed or stored."""
    limit = settings.MESSENGER_HOOK_CALLS_PER_MINUTE
    Budget("messenger_hook_calls", limit, 60).check(conn.pk, detail=f"At most {limit} hook calls per minute.")


def writable(widget: Widget, provider: str) -> Provider:
    """The provider PUT and verify may write (404 unknown, 422 not writable, 409 without a paid plan)."""
    if provider not in PROVIDERS:
        raise NotFound("No such provider.")
    found = registry.get(provider)
    if found is None or not found.writable:
        raise NotWritable(f"`{provider}` is not writable through this endpoint.")
    if not billing.has_paid_plan(widget.account):
        raise PlanRequired("Connecting and verifying messengers need a paid plan.")
    return found


# --- connect, verify, disconnect ------------------------------------------------------------------


def hook_url(conn: MessengerConnection, base_url: str) -> str:
    """The absolute URL registered at the provider; providers that sign nothing and echo no secret
    header get our hook secret in the query (`?token=`, redacted in logs)."""
    url = base_url.rstrip("/") + hook_path(conn)
    provider = registry.get(conn.provider)
    if provider is not None and provider.hook_auth == "query":
        url += "?token=" + (crypto.decrypt_secret(conn.hook_secret_encrypted) or "")
    return url


def _register(conn: MessengerConnection, *, hook_url: str) -> WebhookOutcome:
    cred = stored_credential(conn)
    secret = crypto.decrypt_secret(conn.hook_secret_encrypted)
    provider = registry.get(conn.provider)
    learned = {}
    if cred is None or secret is None:
        outcome = WebhookOutcome(True, MessengerConnection.WebhookStatus.FAILED, "stored credential unreadable")
    else:
        registration = provider.register(cred, hook_url=hook_url, hook_secret=secret)
        outcome = WebhookOutcome(registration.attempted, registration.status, registration.detail)
        if registration.account_id:  # the hook checks events against it (a Messenger page id)
            learned["sid_encrypted"] = crypto.encrypt_secret(registration.account_id)
    MessengerConnection.objects.filter(pk=conn.pk).update(
        **learned,
        webhook_status=outcome.status,
        webhook_detail=outcome.detail[:255],
        # live unless the registration failed: a provider without a webhook mechanism (`not_supported`)
        # or with an unverified one (`unconfirmed_provider_api`) is called at the hook URL set up outside
        inbound_live=outcome.status != MessengerConnection.WebhookStatus.FAILED,
        updated_at=timezone.now(),
    )
    return outcome


def hook_path(conn: MessengerConnection) -> str:
    return f"/api/hooks/{conn.provider}/{conn.hook_id}/"


def connect(
    *, widget: Widget, provider: str, data: dict, base_url: str, claim=contextlib.nullcontext
) -> tuple[dict, WebhookOutcome]:
    """PUT: probe, local write, registration (see the module docstring). Runs outside a
    transaction: no database transaction is held while the provider is called."""
    found = writable(widget, provider)
    if "url" in data:  # `apple`: the gateway must be a real public https address
        webhooks.check_destination(data["url"])
    check_provider_budget(widget)
    token = data["token"]
    refusal = found.probe(token)
    if refusal is not None:
        raise CredentialRejected(
            f"{found.label} rejected the token.", errors={"token": [f"Rejected by the provider: {refusal}"]}
        )
    with transaction.atomic(), claim():
        conn = MessengerConnection.objects.select_for_update().filter(widget=widget, provider=provider).first()
        before = audited(conn) if conn is not None and conn.token_encrypted else None
        if conn is None:
            conn = MessengerConnection(widget=widget, provider=provider, hook_id=secrets.token_urlsafe(24))
            # hex: every provider's secret alphabet takes it (Max allows letters, digits and `-`)
            conn.hook_secret_encrypted = crypto.encrypt_secret(secrets.token_hex(32))
        conn.token_encrypted = crypto.encrypt_secret(token)
        conn.sid_encrypted = crypto.encrypt_secret(data["sid"]) if data.get("sid") else ""
        conn.url = data.get("url", "")
        conn.webhook_status, conn.webhook_detail, conn.inbound_live = "", "", False
        conn.updated_at = timezone.now()
        conn.save()
        audit.record_row(
            widget=widget, target_type=AUDIT_TARGET, target_id=provider, before=before, after=audited(conn)
        )
        events.emit(widget, events.WIDGET_CONFIG_CHANGED)
    outcome = _register(conn, hook_url=hook_url(conn, base_url))
    return get_row(widget, provider), outcome


def verify(
    *, widget: Widget, provider: str, base_url: str, claim=contextlib.nullcontext
) -> tuple[dict, WebhookOutcome]:
    """Re-register the stored credential (409 not_connected when nothing is stored)."""
    writable(widget, provider)
    conn = MessengerConnection.objects.filter(widget=widget, provider=provider).first()
    if conn is None or not conn.token_encrypted:
        raise NotConnected(f"No credential is stored for `{provider}`.")
    check_provider_budget(widget)
    with claim():  # the key is used from here on: the provider is called next
        pass
    outcome = _register(conn, hook_url=hook_url(conn, base_url))
    with transaction.atomic():
        events.emit(widget, events.WIDGET_CONFIG_CHANGED)
    return get_row(widget, provider), outcome


def disconnect(*, widget: Widget, provider: str, base_url: str = "") -> None:
    """DELETE: the accounts the provider keeps apart (VK's communities), the provider-side removal
    (Telegram deleteWebhook, Cian unsubscribe-webhook; short deadline, never blocking), then the
    connection row. `custom` deactivates every custom channel. Never needs a paid plan."""
    if provider not in PROVIDERS:
        raise NotFound("No such provider.")
    check_provider_budget(widget)
    found = registry.get(provider)
    if found is None:  # custom channels
        with transaction.atomic():
            deactivate_custom_channels(widget=widget)  # each audited
            events.emit(widget, events.WIDGET_CONFIG_CHANGED)
        return
    found.remove_accounts(widget)
    conn = MessengerConnection.objects.filter(widget=widget, provider=provider).first()
    if conn is None:
        return
    cred = stored_credential(conn)
    if cred is not None:
        found.unregister(cred, hook_url=hook_url(conn, base_url))  # best effort: an inert webhook may remain
    with transaction.atomic():
        MessengerConnection.objects.filter(pk=conn.pk).delete()
        if conn.token_encrypted:  # a row holding only the hook (VK's) changes no widget configuration
            audit.record_row(
                widget=widget, target_type=AUDIT_TARGET, target_id=provider, before=audited(conn), after=None
            )
            events.emit(widget, events.WIDGET_CONFIG_CHANGED)


def _display_name(raw: str) -> str:
    """A user's name as a contact name: NFC, invisible characters dropped."""
    text = unicodedata.normalize("NFC", raw)
    return "".join(ch for ch in text if unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Zl", "Zp")).strip()[:255]


# --- the hooks and long polling -------------------------------------------------------------------


def find_hook(provider: str, hook_id: str) -> MessengerConnection | None:
    """The connection a hook call is for, or None. SECURITY: a connection that takes no hook calls
    (its inbound not live: the registration failed or has not finished; or its provider reads by
    long polling) is None like an unknown hook id or another provider's, so the three answer alike
    and an authentic call to it stores nothing."""
    if provider not in PROVIDERS or not isinstance(hook_id, str) or len(hook_id) > 64:
        return None
    found = registry.get(provider)
    conn = MessengerConnection.objects.select_related("widget").filter(provider=provider, hook_id=hook_id).first()
    if conn is None or found is None or found.long_poll or not conn.inbound_live:
        return None
    return conn


def receive_provider_hook(*, conn: MessengerConnection, request: HookRequest) -> tuple[str, bytes]:
    """One callback of a provider: counted against the connection's budget (429 before the body is
    read), authenticated with the provider's own mechanism (401 and nothing stored otherwise), then
    every user text message in it, up to HOOK_MESSAGES_LIMIT, becomes a visitor message of the
    provider's chat of that user, once per provider message id. Returns the content type and body
    the provider expects back."""
    provider = registry.get(conn.provider)
    if provider is None:
        raise NotFound()
    check_hook_budget(conn)
    account = provider.hook_account(conn, request) or HookAccount(
        stored_credential(conn), crypto.decrypt_secret(conn.hook_secret_encrypted) or ""
    )
    if account.answer is not None:
        return account.answer
    if account.cred is None or not provider.authentic(account.cred, account.secret, request):
        raise HookUnauthorized(provider.refusal)
    data = provider.decode(request.body)
    items = provider.messages(account.cred, data)
    if len(items) > HOOK_MESSAGES_LIMIT:  # the rest is acknowledged and dropped
        logger.warning(
            "hook call over its message limit",
            extra={
                "widget_id": conn.widget_id,
                "provider": conn.provider,
                "messages": len(items),
                "stored": HOOK_MESSAGES_LIMIT,
            },
        )
    for item in items[:HOOK_MESSAGES_LIMIT]:
        _store_inbound(conn, item)
    return provider.hook_answer(data)


def provider_handshake(*, conn: MessengerConnection, query: dict[str, str]) -> str:
    """A provider's GET verification of our hook URL (Meta): the challenge to echo; 404 otherwise."""
    provider = registry.get(conn.provider)
    answer = provider.handshake(query) if provider is not None else None
    if answer is None:
        raise NotFound()
    return answer


def poll_connection(conn: MessengerConnection) -> int:
    """Long-poll mode: one read from the stored offset; its events go the hook's way (dedupe,
    contact, chat, message), then the offset moves past them. A crash between the two re-reads
    events the dedupe drops. Returns the number of events taken."""
    provider, cred = registry.get(conn.provider), stored_credential(conn)
    if provider is None or cred is None:
        return 0
    polled = provider.poll(cred, offset=conn.poll_offset)
    if polled.error:
        logger.warning(
            "long-poll read failed",
            extra={"widget_id": conn.widget_id, "provider": conn.provider, "detail": polled.error},
        )
        return 0
    for event in polled.events:
        for item in provider.messages(cred, event):
            _store_inbound(conn, item)
    if polled.events:
        conn.poll_offset = polled.next_offset
        MessengerConnection.objects.filter(pk=conn.pk).update(poll_offset=conn.poll_offset)
    return len(polled.events)


def poll_all() -> int:
    """Every live connection of a provider in long-poll mode (Telegram with TELEGRAM_LONG_POLL)
    polled once."""
    taken = 0
    for provider in registry.PROVIDERS.values():
        if not provider.long_poll:
            continue
        for conn in MessengerConnection.objects.select_related("widget").filter(
            provider=provider.code, inbound_live=True
        ):
            taken += poll_connection(conn)
    return taken


poll_all_telegram = poll_all  # the beat task's name: Telegram is the provider with a long-poll mode


def _update_key(update_id: str) -> str:
    """The dedupe key of a provider update id (long ids, such as Meta's, as their SHA-256)."""
    return update_id if len(update_id) <= 64 else hashlib.sha256(update_id.encode()).hexdigest()


@transaction.atomic
def _store_inbound(conn: MessengerConnection, item: Inbound) -> Message | None:
    """One message a provider's `messages` let through (`Inbound.storable`): its ids and text fit."""
    widget = conn.widget
    try:
        with transaction.atomic():
            InboundUpdate.objects.create(widget=widget, provider=conn.provider, update_id=_update_key(item.update_id))
    except IntegrityError:
        return None  # a redelivered update makes no second message
    link = link_external_contact(
        widget=widget,
        channel=conn.provider,
        external_id=item.external_id,
        address=item.address,
        name=_display_name(item.name),
    )
    return chat_services.post_client_message(
        widget=widget,
        contact=link.contact,
        data=chat_services.MessageInput(body=item.text),
        channel=conn.provider,
        source=conn.provider,
    )
