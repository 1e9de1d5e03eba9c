"""How operator messages reach the channels: deliveries of the webhook engine (apps.webhooks), as
every signed outbound call is. A custom channel's messages go to its `Endpoint` (owner
`custom_channel`), a messenger's to the widget's endpoint of that provider (owner `messenger:<code>`);
the engine leases, sends, logs, retries and sweeps them like a webhook's. What differs lives in the
two endpoint kinds below:

- `CustomChannels`: the engine's signed POST to the channel's URL with the channel's secret, both
  read when the attempt runs (a switched-off channel fails the row: `channel_inactive`); a 429's
  `Retry-After` is waited for.
- `Messengers`: the provider's own send call with the credential read when the attempt runs (once a
  batch per account), one attempt of an endpoint in flight at a time so a chat's messages keep their
  order, and the provider's verdict on each answer (its refusal of the request itself is final;
  Telegram's `retry_after` in the body is waited for).

Both keep the engine's policy: 4 attempts, waits of 10, 20 and 40 s, 15 s an attempt.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping

from apps.chats.models import Message
from apps.core import crypto
from apps.core.models import Widget
from apps.platform.numbers import parse_int
from apps.webhooks import services as webhooks
from apps.webhooks.models import Delivery, Endpoint

from .models import CustomChannel
from .providers import registry
from .providers.base import Credential, Provider

CUSTOM_OWNER = "custom_channel"
MESSENGER_OWNER = "messenger:"  # + the provider's code
EVENT_TYPE = "message.created"
USER_AGENT = "ChatWidgetService-Channels/1"
MAX_RETRY_AFTER = 3600  # a receiver asking for more is waited for this long


def owners() -> list[str]:
    """Every endpoint owner of the channels: custom channels and each messenger provider."""
    return [CUSTOM_OWNER, *(MESSENGER_OWNER + code for code in registry.PROVIDERS)]


# --- queueing -------------------------------------------------------------------------------------


def _endpoint(*, widget: Widget, owner: str, owner_id: int, url: str) -> Endpoint:
    """The widget's endpoint for one channel, made with its first message. Two first messages at once
    make one endpoint: the maker takes the widget's row lock and looks again under it, so the second
    waits for the first's commit and finds its endpoint (a messenger's order depends on there being
    one). `no_key` leaves the row's key-share locks, which every insert referencing the widget
    takes, unblocked. Under SQLite the message's transaction already holds the database's write
    lock."""
    endpoints = Endpoint.objects.filter(widget=widget, owner=owner, owner_id=owner_id).order_by("pk")
    found = endpoints.first()
    if found is None:
        Widget.objects.select_for_update(no_key=True).filter(pk=widget.pk).exists()
        found = endpoints.first()
    if found is not None:
        return found
    return webhooks.create_endpoint(widget=widget, owner=owner, owner_id=owner_id, url=url, secret_encrypted="")


def queue(
    *, widget: Widget, channel: CustomChannel | None, provider: Provider | None, message: Message, body
) -> Delivery:
    """Inside the message's transaction: the delivery of `message` to a custom channel or a messenger,
    sent once the transaction commits. `body` is the stored body, or a function of the delivery's key
    (its `id`) returning it."""
    key = uuid.uuid4()
    if channel is not None:
        endpoint = _endpoint(widget=widget, owner=CUSTOM_OWNER, owner_id=channel.pk, url=channel.url)
    else:
        # the provider's send call is built per attempt (the kind's `request`): the endpoint has no URL
        endpoint = _endpoint(widget=widget, owner=MESSENGER_OWNER + provider.code, owner_id=0, url="")
    text = body(key) if callable(body) else body
    return webhooks.enqueue_call(
        endpoint=endpoint, event_type=EVENT_TYPE, body=text.encode(), key=key, message_id=message.pk
    )


# --- the kinds ------------------------------------------------------------------------------------


def retry_after(status_code: int, headers: Mapping[str, str], content: bytes) -> int | None:
    """The wait a 429 asks for: `Retry-After` in seconds, or Telegram's `parameters.retry_after` in
    the body; capped at MAX_RETRY_AFTER."""
    if status_code != 429:
        return None
    try:
        value = parse_int(headers.get("Retry-After"), maximum=10**9)
    except ValueError:
        try:
            value = json.loads(content)["parameters"]["retry_after"]
        except (ValueError, KeyError, TypeError):
            return None
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            return None
    return min(value, MAX_RETRY_AFTER)


class CustomChannels(webhooks.EndpointKind):
    metric = "channel"

    def prepare(self, rows: list[Delivery]) -> dict[int, CustomChannel | None]:
        channels = CustomChannel.objects.in_bulk({row.endpoint.owner_id for row in rows})
        return {row.pk: channels.get(row.endpoint.owner_id) for row in rows}

    def request(self, row: Delivery) -> webhooks.Request:
        channel = row.prepared
        if channel is None or not channel.is_active:
            raise webhooks.Undeliverable("channel_inactive")
        secret = crypto.decrypt_secret(channel.secret_encrypted)
        if secret is None:
            raise webhooks.Undeliverable("missing_secret")
        built = webhooks.signed_request(row, url=channel.url, secret=secret)
        built.headers["User-Agent"] = USER_AGENT
        return built

    def verdict(self, status_code: int, content: bytes, headers: Mapping[str, str]) -> webhooks.Verdict:
        if 200 <= status_code < 300:
            return webhooks.Verdict("")
        return webhooks.Verdict(f"http_{status_code}", retry_after=retry_after(status_code, headers, content))


class Messengers(webhooks.EndpointKind):
    metric = "channel"
    max_in_flight = 1  # a chat's messages arrive in the order they were written

    def __init__(self, provider: Provider):
        self.provider = provider

    def prepare(self, rows: list[Delivery]) -> dict[int, tuple[dict, Credential | None]]:
        """Each row's stored body and the credential that sends it, read once per account."""
        credentials: dict[tuple[int, str], Credential | None] = {}
        prepared = {}
        for row in rows:
            stored = json.loads(row.body)
            account = (row.widget_id, self.provider.account_key(stored))
            if account not in credentials:
                credentials[account] = self.provider.load_credential(*account)
            prepared[row.pk] = (stored, credentials[account])
        return prepared

    def request(self, row: Delivery) -> webhooks.Request:
        stored, credential = row.prepared
        if credential is None:
            raise webhooks.Undeliverable("not_connected")
        # a row moved from the channels' own log keeps the id its earlier attempts were sent with
        sent = self.provider.delivery_request(credential, stored, delivery_id=stored.get("random_id", row.pk))
        return webhooks.Request(url=sent.url, body=sent.body, headers={"User-Agent": USER_AGENT, **sent.headers})

    def verdict(self, status_code: int, content: bytes, headers: Mapping[str, str]) -> webhooks.Verdict:
        """The provider's verdict: its refusal of the request itself (bad chat, bot blocked) is final."""
        error, permanent = self.provider.send_error(status_code, content)
        return webhooks.Verdict(error, permanent, retry_after(status_code, headers, content) if error else None)


def kinds() -> dict[str, webhooks.EndpointKind]:
    """The endpoint kinds the app provides, by owner (apps.py)."""
    return {
        CUSTOM_OWNER: CustomChannels(),
        **{MESSENGER_OWNER + code: Messengers(provider) for code, provider in registry.PROVIDERS.items()},
    }
