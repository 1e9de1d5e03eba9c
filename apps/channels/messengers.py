"""Messenger providers: reads, connect (PUT), verify, disconnect (DELETE), the inbound hooks.

PUT runs in the spec's order: the read-only probe of the credential (Telegram `getMe` only; a real
rejection is 422 and stores nothing), then the local write (committed), then the provider webhook
registration (`setWebhook`, Viber `set_webhook`, OK.ru `me/subscribe`, Max `POST /subscriptions`,
Cian `subscribe-webhook`, AliExpress's unverified subscribe; `wa`, `fb`, `apple` have none), whose
failure leaves the credential saved and inbound not live (retry with verify). DELETE tries the
provider-side removal first (`tg` deleteWebhook, `cian` unsubscribe-webhook; short deadline) and
never lets it block. Connecting and verifying need a paid plan; removing never does. Requests to
these routes count 10 per minute per widget (sliding window) before any provider is called. Every
successful write purges the widget cache (widget.config_changed).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import secrets
import unicodedata
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.billing import selectors as billing
from apps.chats import services as chat_services
from apps.chats.models import Message
from apps.core import crypto, events
from apps.core.errors import AppError, Conflict, NotFound, ValidationFailed
from apps.core.models import Widget
from apps.core.ratelimit import Budget
from apps.webhooks import services as webhooks

from . import selectors
from .models import CustomChannel, InboundUpdate, MessengerConnection, VkCommunity
from .providers import registry, telegram, vk
from .providers.base import Credential, HookRequest
from .services import link_external_contact

logger = logging.getLogger(__name__)

PROVIDERS = ("tg", "vk", "wa", "vb", "fb", "ok", "mx", "cian", "ali", "apple", "custom")
NOT_WRITABLE = ("vk", "custom")
WITH_SID = ("wa", "apple")
# Every writable provider is connected through PUT: Telegram by its own module, the others through
# the generic path of `providers.registry` (registration, signed or secret-carrying hook, send call).
PROVIDER_CALLS = Budget("messenger_provider_calls", 10, 60)
SOURCE_TG = "tg"


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


# --- reads ----------------------------------------------------------------------------------------


def provider_row(widget: Widget, provider: str, stored: MessengerConnection | None) -> dict:
    """`{provider, connected, writable, has_token, has_sid?}`: never a secret or a hook URL."""
    if provider == "custom":
        connected = selectors.has_active_custom_channel(widget)
        row = {"provider": provider, "connected": connected, "writable": False, "has_token": False}
    elif provider == "vk":
        connected = VkCommunity.objects.filter(widget=widget).exists()
        row = {"provider": provider, "connected": connected, "writable": False, "has_token": connected}
    else:
        row = {
            "provider": provider,
            "connected": stored is not None and bool(stored.token_encrypted),
            "writable": provider not in NOT_WRITABLE,
            "has_token": stored is not None and bool(stored.token_encrypted),
        }
    if provider in WITH_SID:
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


def _writable(widget: Widget, provider: str) -> None:
    if provider not in PROVIDERS:
        raise NotFound("No such provider.")
    if provider in NOT_WRITABLE:
        raise NotWritable(f"`{provider}` is not writable through this endpoint.")
    if not billing.has_paid_plan(widget.account):
        raise PlanRequired("Connecting and verifying messengers need a paid plan.")


# --- connect, verify, disconnect ------------------------------------------------------------------


def credential(conn: MessengerConnection) -> Credential | None:
    """The stored credential, decrypted; None when it cannot be read (key dropped) or is gone."""
    token = crypto.decrypt_secret(conn.token_encrypted) if conn.token_encrypted else None
    sid = crypto.decrypt_secret(conn.sid_encrypted) if conn.sid_encrypted else ""
    if not token or sid is None:
        return None
    return Credential(token=token, sid=sid, url=conn.url)


def hook_url(conn: MessengerConnection, base_url: str) -> str:
    """The absolute URL registered at the provider; providers that sign nothing and echo no secret
    header get our hook secret in the query (`?token=`, redacted in logs)."""
    url = base_url.rstrip("/") + hook_path(conn)
    provider = registry.get(conn.provider)
    if provider is not None and provider.hook_auth == "query":
        url += "?token=" + (crypto.decrypt_secret(conn.hook_secret_encrypted) or "")
    return url


def _register(conn: MessengerConnection, *, hook_url: str) -> WebhookOutcome:
    cred = credential(conn)
    secret = crypto.decrypt_secret(conn.hook_secret_encrypted)
    provider = registry.get(conn.provider)
    learned = {}
    if cred is None or secret is None:
        outcome = WebhookOutcome(True, MessengerConnection.WebhookStatus.FAILED, "stored credential unreadable")
    elif provider is not None:
        registration = provider.register(cred, hook_url=hook_url, hook_secret=secret)
        outcome = WebhookOutcome(registration.attempted, registration.status, registration.detail)
        if registration.account_id:  # the hook checks events against it (a Messenger page id)
            learned["sid_encrypted"] = crypto.encrypt_secret(registration.account_id)
    elif settings.TELEGRAM_LONG_POLL:  # no webhook: delete it, check the identity; beat polls
        result = telegram.delete_webhook(cred.token)
        if result.ok:
            result = telegram.get_me(cred.token)
        if result.ok:
            outcome = WebhookOutcome(True, MessengerConnection.WebhookStatus.REGISTERED, "long-poll mode")
        else:
            outcome = WebhookOutcome(True, MessengerConnection.WebhookStatus.FAILED, result.description)
    else:
        result = telegram.set_webhook(cred.token, url=hook_url, secret_token=secret)
        if result.ok:
            outcome = WebhookOutcome(True, MessengerConnection.WebhookStatus.REGISTERED)
        else:
            outcome = WebhookOutcome(True, MessengerConnection.WebhookStatus.FAILED, result.description)
    MessengerConnection.objects.filter(pk=conn.pk).update(
        **learned,
        webhook_status=outcome.status,
        webhook_detail=outcome.detail[:255],
        inbound_live=outcome.status == MessengerConnection.WebhookStatus.REGISTERED,
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
    _writable(widget, provider)
    if "url" in data:  # `apple`: the gateway must be a real public https address
        webhooks.check_destination(data["url"])
    check_provider_budget(widget)
    token = data["token"]
    if provider == "tg":  # the read-only probe: the chat messenger only (endpoints.md, Rules)
        probe = telegram.get_me(token)
        if probe.rejected:
            raise CredentialRejected(
                "Telegram rejected the token.", errors={"token": [f"Rejected by the provider: {probe.description}"]}
            )
    with transaction.atomic(), claim():
        conn = MessengerConnection.objects.select_for_update().filter(widget=widget, provider=provider).first()
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
        events.emit(widget, events.WIDGET_CONFIG_CHANGED)
    outcome = _register(conn, hook_url=hook_url(conn, base_url))
    return get_row(widget, provider), outcome


def verify(
    *, widget: Widget, provider: str, base_url: str, claim=contextlib.nullcontext
) -> tuple[dict, WebhookOutcome]:
    """Re-register the stored credential (409 not_connected when nothing is stored)."""
    _writable(widget, provider)
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
    """DELETE: the provider-side removal first (Telegram deleteWebhook, Cian unsubscribe-webhook;
    short deadline, never blocking), then the stored credential. `custom` deactivates every custom
    channel. Never needs a paid plan."""
    if provider not in PROVIDERS:
        raise NotFound("No such provider.")
    check_provider_budget(widget)
    if provider == "custom":
        with transaction.atomic():
            CustomChannel.objects.filter(widget=widget, is_active=True).update(
                is_active=False, updated_at=timezone.now()
            )
            events.emit(widget, events.WIDGET_CONFIG_CHANGED)
        return
    if provider == "vk":
        for community in VkCommunity.objects.filter(widget=widget).order_by("pk"):
            delete_community(widget=widget, community=community, count_call=False)  # 502 keeps what VK did not confirm
        MessengerConnection.objects.filter(widget=widget, provider="vk").delete()
        return
    conn = MessengerConnection.objects.filter(widget=widget, provider=provider).first()
    if conn is None:
        return
    cred = credential(conn)
    if provider == "tg" and cred is not None:
        telegram.delete_webhook(cred.token)  # best effort: an inert webhook may remain
    elif registry.get(provider) is not None and cred is not None:
        registry.get(provider).unregister(cred, hook_url=hook_url(conn, base_url))  # a no-op but for cian
    with transaction.atomic():
        MessengerConnection.objects.filter(pk=conn.pk).delete()
        events.emit(widget, events.WIDGET_CONFIG_CHANGED)


def _display_name(sender: dict) -> str:
    """The user's first and last name as a contact name: NFC, invisible characters dropped."""
    raw = " ".join(str(sender.get(k) or "") for k in ("first_name", "last_name"))
    text = unicodedata.normalize("NFC", raw)
    return "".join(ch for ch in text if unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Zl", "Zp")).strip()[:255]


# --- the Telegram hook ----------------------------------------------------------------------------


def find_hook(provider: str, hook_id: str) -> MessengerConnection | None:
    if provider not in PROVIDERS or not isinstance(hook_id, str) or len(hook_id) > 64:
        return None
    return MessengerConnection.objects.select_related("widget").filter(provider=provider, hook_id=hook_id).first()


def check_telegram_secret(conn: MessengerConnection, header: str | None) -> None:
    expected = crypto.decrypt_secret(conn.hook_secret_encrypted) or ""
    if not expected or not hmac.compare_digest(expected.encode(), (header or "").encode()):
        raise HookUnauthorized("X-Telegram-Bot-Api-Secret-Token does not match.")


@transaction.atomic
def receive_telegram_update(*, conn: MessengerConnection, update: dict) -> Message | None:
    """One Telegram update: a text message from a user becomes a visitor message of the `tg` chat
    of that user (contact and chat made on first use). A redelivered update_id stores nothing;
    updates without text are acknowledged and dropped. Returns the stored message or None."""
    widget = conn.widget
    update_id = update.get("update_id")
    if isinstance(update_id, bool) or not isinstance(update_id, int):
        raise ValidationFailed("Not a Telegram update.", errors={"update_id": ["Must be an integer."]})
    message = update.get("message")
    if not isinstance(message, dict):
        return None
    text, chat, sender = message.get("text"), message.get("chat"), message.get("from") or {}
    if not isinstance(text, str) or not text.strip() or not isinstance(chat, dict):
        return None
    chat_id = chat.get("id")
    if isinstance(chat_id, bool) or not isinstance(chat_id, int):
        return None
    try:
        with transaction.atomic():
            InboundUpdate.objects.create(widget=widget, provider="tg", update_id=str(update_id))
    except IntegrityError:
        return None  # already stored: Telegram redelivers until it gets a 200
    external_id = str(sender.get("id") if isinstance(sender.get("id"), int) else chat_id)
    link = link_external_contact(
        widget=widget, channel="tg", external_id=external_id, address=str(chat_id), name=_display_name(sender)
    )
    return chat_services.post_client_message(
        widget=widget,
        contact=link.contact,
        data=chat_services.MessageInput(body=text[:65536]),
        channel="tg",
        source=SOURCE_TG,
    )


def poll_telegram(conn: MessengerConnection) -> int:
    """Long-poll mode: one getUpdates from the stored offset; each update goes through
    `receive_telegram_update` (the hook's path: dedupe, contact, chat, message), then the offset
    moves past the last one. A crash between the two re-reads updates the dedupe drops. Returns the
    number of updates taken."""
    cred = credential(conn)
    if cred is None:
        return 0
    result = telegram.get_updates(cred.token, offset=conn.poll_offset)
    if not result.ok or not isinstance(result.result, list):
        logger.warning("telegram getUpdates failed", extra={"widget_id": conn.widget_id, "detail": result.description})
        return 0
    updates = [u for u in result.result if isinstance(u, dict) and type(u.get("update_id")) is int]
    for update in sorted(updates, key=lambda u: u["update_id"]):
        receive_telegram_update(conn=conn, update=update)
    if updates:
        conn.poll_offset = max(u["update_id"] for u in updates) + 1
        MessengerConnection.objects.filter(pk=conn.pk).update(poll_offset=conn.poll_offset)
    return len(updates)


def poll_all_telegram() -> int:
    """Every live Telegram connection polled once (long-poll mode only)."""
    if not settings.TELEGRAM_LONG_POLL:
        return 0
    taken = 0
    for conn in MessengerConnection.objects.select_related("widget").filter(provider="tg", inbound_live=True):
        taken += poll_telegram(conn)
    return taken


# --- the other providers' hooks -------------------------------------------------------------------


def _update_key(update_id: str) -> str:
    """The dedupe key of a provider update id (long ids, such as Meta's, as their SHA-256)."""
    return update_id if len(update_id) <= 64 else hashlib.sha256(update_id.encode()).hexdigest()


def receive_provider_hook(*, conn: MessengerConnection, request: HookRequest) -> tuple[str, bytes]:
    """One callback of a generic provider: authenticated with the provider's own mechanism (401
    and nothing stored otherwise), then every user text message in it becomes a visitor message of
    the provider's chat of that user, once per provider message id. Returns the content type and
    body the provider expects back."""
    provider = registry.get(conn.provider)
    cred = credential(conn)
    secret = crypto.decrypt_secret(conn.hook_secret_encrypted) or ""
    if provider is None or cred is None or not provider.authentic(cred, secret, request):
        raise HookUnauthorized("The provider's signature or secret does not match.")
    try:
        data = json.loads(request.body or b"")
    except ValueError:
        raise ValidationFailed("Not a provider event.", errors={"body": ["Not JSON."]}) from None
    if not isinstance(data, dict):
        raise ValidationFailed("Not a provider event.", errors={"body": ["Expected a JSON object."]})
    for item in provider.parse(cred, data):
        _store_inbound(conn, item)
    return provider.hook_answer(data)


def provider_handshake(*, conn: MessengerConnection, query: dict[str, str]) -> str:
    """A provider's GET verification of our hook URL (Meta): the challenge to echo; 404 otherwise."""
    provider = registry.get(conn.provider)
    answer = provider.handshake(query) if provider is not None else None
    if answer is None:
        raise NotFound()
    return answer


@transaction.atomic
def _store_inbound(conn: MessengerConnection, item) -> Message | None:
    widget = conn.widget
    try:
        with transaction.atomic():
            InboundUpdate.objects.create(widget=widget, provider=conn.provider, update_id=_update_key(item.update_id))
    except IntegrityError:
        return None  # a redelivered update makes no second message
    link = link_external_contact(
        widget=widget,
        channel=conn.provider,
        external_id=item.external_id[:255],
        address=item.address[:255],
        name=_display_name({"first_name": item.name}),
    )
    return chat_services.post_client_message(
        widget=widget,
        contact=link.contact,
        data=chat_services.MessageInput(body=item.text[:65536]),
        channel=conn.provider,
        source=conn.provider,
    )


# --- VK communities -------------------------------------------------------------------------------


class ProviderFailed(AppError):
    status, code, title = 502, "provider_failed", "The provider did not answer or did not confirm"


class CommunityExists(Conflict):
    code, title = "community_exists", "This community is already connected"


def _vk_hook(widget: Widget) -> MessengerConnection:
    """The widget's VK hook (one per widget; communities are told apart by group_id)."""
    conn = MessengerConnection.objects.filter(widget=widget, provider="vk").first()
    if conn is None:
        try:
            with transaction.atomic():
                conn = MessengerConnection.objects.create(
                    widget=widget, provider="vk", hook_id=secrets.token_urlsafe(24)
                )
        except IntegrityError:
            conn = MessengerConnection.objects.get(widget=widget, provider="vk")
    return conn


def community_payload(community: VkCommunity) -> dict:
    return {
        "id": community.pk,
        "community_id": community.community_id,
        "name": community.name,
        "screen_name": community.screen_name,
        "is_primary": community.is_primary,
        "webhook_status": community.webhook_status or None,
        "created_at": community.created_at.isoformat(),
    }


def connect_community(
    *, widget: Widget, token: str, community: str, base_url: str, claim=contextlib.nullcontext
) -> tuple[VkCommunity, WebhookOutcome]:
    """Resolve the community through VK (a rejection is 422, no answer 502, nothing stored), store
    it (the first one is primary), then register our Callback API server; a failed registration
    keeps the record with inbound not live."""
    if not billing.has_paid_plan(widget.account):
        raise PlanRequired("Connecting messengers needs a paid plan.")
    key = vk.community_key(community)
    if key is None:
        raise ValidationFailed(errors={"community": ["An id, a club-style name or a vk.com link."]})
    check_provider_budget(widget)
    found = vk.resolve(token, key)
    if not found.ok:
        if found.rejected:
            raise CredentialRejected(
                "VK refused the token or the community.", errors={"community": [found.description]}
            )
        raise ProviderFailed(f"VK did not answer: {found.description}")
    group = found.response
    community_id = group.get("id") if isinstance(group.get("id"), int) else None
    if community_id is None:
        raise ProviderFailed("VK answered without a community id.")
    hook = _vk_hook(widget)
    with transaction.atomic(), claim():
        if VkCommunity.objects.filter(widget=widget, community_id=community_id).exists():
            raise CommunityExists("This community is already connected to the widget.")
        row = VkCommunity.objects.create(
            widget=widget,
            community_id=community_id,
            name=str(group.get("name") or "")[:255],
            screen_name=str(group.get("screen_name") or "")[:255],
            token_encrypted=crypto.encrypt_secret(token),
            secret_encrypted="",
            is_primary=not VkCommunity.objects.filter(widget=widget).exists(),
        )
        events.emit(widget, events.WIDGET_CONFIG_CHANGED)
    result, code, secret, server_id = vk.register(
        token, community_id=community_id, url=base_url.rstrip("/") + hook_path(hook)
    )
    outcome = (
        WebhookOutcome(True, MessengerConnection.WebhookStatus.REGISTERED)
        if result.ok
        else WebhookOutcome(True, MessengerConnection.WebhookStatus.FAILED, result.description)
    )
    VkCommunity.objects.filter(pk=row.pk).update(
        confirmation_code=code[:64],
        secret_encrypted=crypto.encrypt_secret(secret),
        server_id=server_id,
        webhook_status=outcome.status,
        webhook_detail=outcome.detail[:255],
    )
    row.refresh_from_db()
    return row, outcome


@transaction.atomic
def set_primary_community(*, widget: Widget, community: VkCommunity) -> VkCommunity:
    VkCommunity.objects.select_for_update().filter(widget=widget).update(is_primary=False)
    VkCommunity.objects.filter(pk=community.pk, widget=widget).update(is_primary=True)
    events.emit(widget, events.WIDGET_CONFIG_CHANGED)
    community.refresh_from_db()
    return community


def delete_community(*, widget: Widget, community: VkCommunity, count_call: bool = True) -> None:
    """Remove our callback server at VK first; when VK does not confirm, the record stays and the
    answer is 502 (try again). The next oldest community becomes primary."""
    if count_call:
        check_provider_budget(widget)
    token = crypto.decrypt_secret(community.token_encrypted)
    if community.server_id is not None:
        result = vk.unregister(token or "", community_id=community.community_id, server_id=community.server_id)
        if not result.ok:
            raise ProviderFailed(f"VK did not confirm the removal ({result.description}); the community is kept.")
    with transaction.atomic():
        VkCommunity.objects.filter(pk=community.pk, widget=widget).delete()
        if community.is_primary:
            successor = VkCommunity.objects.filter(widget=widget).order_by("created_at", "pk").first()
            if successor is not None:
                VkCommunity.objects.filter(pk=successor.pk).update(is_primary=True)
        events.emit(widget, events.WIDGET_CONFIG_CHANGED)


def receive_vk_event(*, conn: MessengerConnection, event: dict) -> str:
    """One Callback API event. `confirmation` answers the community's confirmation code; others
    must carry the community's secret (401 otherwise); `message_new` becomes a visitor message of
    the `vk` chat of its sender, once per event_id. Returns the plain-text answer VK expects."""
    widget = conn.widget
    group_id = event.get("group_id")
    if isinstance(group_id, bool) or not isinstance(group_id, int):
        raise ValidationFailed("Not a VK event.", errors={"group_id": ["Must be an integer."]})
    community = VkCommunity.objects.filter(widget=widget, community_id=group_id).first()
    if community is None:
        raise NotFound("No such community.")
    if event.get("type") == "confirmation":
        return community.confirmation_code
    expected = crypto.decrypt_secret(community.secret_encrypted) or ""
    given = event.get("secret") if isinstance(event.get("secret"), str) else ""
    if not expected or not hmac.compare_digest(expected.encode(), given.encode()):
        raise HookUnauthorized("The VK secret does not match.")
    if event.get("type") != "message_new":
        return "ok"
    message = (event.get("object") or {}).get("message") if isinstance(event.get("object"), dict) else None
    if not isinstance(message, dict):
        return "ok"
    text, from_id, peer_id = message.get("text"), message.get("from_id"), message.get("peer_id")
    if not isinstance(text, str) or not text.strip() or not isinstance(from_id, int) or not isinstance(peer_id, int):
        return "ok"
    event_id = event.get("event_id")
    dedupe = str(event_id) if isinstance(event_id, str) and event_id else f"{group_id}:{message.get('id')}"
    with transaction.atomic():
        try:
            with transaction.atomic():
                InboundUpdate.objects.create(widget=widget, provider="vk", update_id=dedupe[:64])
        except IntegrityError:
            return "ok"
        link = link_external_contact(
            widget=widget, channel="vk", external_id=str(from_id), address=f"{group_id}:{peer_id}"
        )
        chat_services.post_client_message(
            widget=widget,
            contact=link.contact,
            data=chat_services.MessageInput(body=text[:65536]),
            channel="vk",
            source="vk",
        )
    return "ok"
