"""A rule's `send_webhook {url}`: one signed POST through the webhook delivery engine
(apps.webhooks: the same rows, retries, attempt log and guarded outbound client as a subscription).

The call is signed with the secret of the widget's webhook subscription to the same URL: the owner
subscribes the address under Webhooks first (with any events, or none) and the receiver checks the
rule's calls with the secret it already holds, rotated with the subscription's. The body is the
native envelope: `{"id", "type": "automation.rule_matched", "data": {button_guid, rule_id,
rule_name, event, chat_id, ...the event's ids}}`.
"""

from __future__ import annotations

import json
import uuid

from django.utils import timezone

from apps.core.errors import AppError, ValidationFailed
from apps.core.models import Widget
from apps.webhooks import services as webhooks
from apps.webhooks.models import Endpoint, Subscription

OWNER = "automation"
EVENT_TYPE = "automation.rule_matched"
NO_SUBSCRIPTION = (
    "Subscribe this address under Webhooks first: the rule's calls are signed with that subscription's secret."
)


class WebhookNotSubscribed(AppError):
    """The widget has no webhook subscription to the rule's URL any more (nothing signs the call)."""

    status, code, title = 422, "webhook_not_subscribed", "No webhook subscription to this URL"


def check_webhook_actions(*, widget: Widget, actions: list[dict]) -> None:
    """Every send_webhook URL is one of the widget's subscriptions' (ValidationFailed otherwise)."""
    urls = {index: action["url"] for index, action in enumerate(actions) if action.get("type") == "send_webhook"}
    if not urls:
        return
    known = set(Subscription.objects.filter(widget=widget, url__in=set(urls.values())).values_list("url", flat=True))
    errors = {f"actions.{index}.url": [NO_SUBSCRIPTION] for index, url in urls.items() if url not in known}
    if errors:
        raise ValidationFailed("One or more fields are invalid.", errors=errors)


def send(*, widget: Widget, url: str, rule, event_type: str, data: dict) -> None:
    """Queue the call in the caller's transaction (sent once it commits)."""
    subscription = Subscription.objects.filter(widget=widget, url=url).only("pk", "secret_encrypted").first()
    if subscription is None:
        raise WebhookNotSubscribed(NO_SUBSCRIPTION)
    endpoint = Endpoint.objects.filter(widget=widget, owner=OWNER, owner_id=subscription.pk).first()
    if endpoint is None:
        endpoint = webhooks.create_endpoint(
            widget=widget,
            owner=OWNER,
            owner_id=subscription.pk,
            url=url,
            secret_encrypted=subscription.secret_encrypted,
        )
    elif endpoint.secret_encrypted != subscription.secret_encrypted:  # the subscription's secret was rotated
        # the same stored token: queued and retried calls sign with the subscription's new secret
        Endpoint.objects.filter(pk=endpoint.pk).update(secret_encrypted=subscription.secret_encrypted)
    key = uuid.uuid4()
    body = {
        "id": str(key),
        "type": EVENT_TYPE,
        "created_at": timezone.now().isoformat(),
        "data": {
            "button_guid": widget.button_guid,
            "rule_id": rule.pk,
            "rule_name": rule.name,
            "event": event_type,
            **data,
        },
    }
    encoded = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    webhooks.enqueue_call(endpoint=endpoint, event_type=EVENT_TYPE, body=encoded, key=key)
