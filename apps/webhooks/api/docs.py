"""The deliveries as OpenAPI 3.1 `webhooks`: what a receiver is sent, per event, in both envelopes.

Listed in SPECTACULAR_SETTINGS["WEBHOOKS"]. Written as raw operations (inline schemas, no
components) from the one event catalogue (apps.core.events.CATALOGUE) and the typed members below;
a test keeps the two in step and checks real bodies against these schemas.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiWebhook

from apps.core import events

from .. import catalogue

_INT = {"type": "integer"}
_GUID = {"type": "string", "description": "Contact guid (32 hex characters)."}
_AUTHOR = {"type": "string", "enum": ["USER", "OPERATOR"], "description": "`USER` (the visitor) or `OPERATOR`."}
_CHAT_ID = {**_INT, "description": "The chat's id."}
_SOURCE = {"type": "string", "description": "Where the change came from: `api`, `visitor`, `system`, a channel code."}

# Every data member of the catalogue, typed (button_guid is added to every event).
DATA_MEMBERS: dict[str, dict] = {
    "button_guid": {"type": "string", "description": "The widget's public guid."},
    "chat_id": _CHAT_ID,
    "message_id": {**_INT, "description": "The message's id."},
    "client_id": _GUID,
    "client_guid": _GUID,
    "chat_client_id": _GUID,
    "author_type": _AUTHOR,
    "source": _SOURCE,
    "from_operator_id": {"type": ["integer", "null"], "description": "Null when the chat had no agent."},
    "to_operator_id": {**_INT, "description": "The agent the chat was transferred to."},
    "operator_id": {"type": ["integer", "null"], "description": "Null for a rating of an unhandled chat."},
    "operator_type": {"type": "string", "enum": ["human", "ai"], "description": "`human` or `ai`."},
    "reason": {"type": "string", "description": "`expired`, or the reason given to the close endpoint."},
    "name": {"type": ["string", "null"], "description": "The name the visitor left; null when none."},
    "email": {"type": ["string", "null"], "description": "The e-mail address the visitor left; null when none."},
    "phone": {"type": ["string", "null"], "description": "The phone number the visitor left; null when none."},
    "changed_fields": {
        "type": "array",
        "items": {"type": "string"},
        "description": "The contact fields the change touched.",
    },
    "contact_id": {**_GUID, "description": "The erased contact's former guid."},
    "from": {**_GUID, "description": "The merged contact's former guid (it no longer exists)."},
    "into": {**_GUID, "description": "The guid of the contact it was merged into."},
    "agent_id": {
        "type": ["integer", "null"],
        "description": "The new routing owner; null when the chat went back to the queue.",
    },
    "by": {
        "type": "string",
        "enum": ["routing", "agent", "api", "automation"],
        "description": "Who assigned: `routing` (automatic), `agent` (a person in the console), `api`, `automation`.",
    },
    "policy_id": {"type": ["integer", "null"], "description": "The SLA policy whose clock ran out."},
    "kind": {
        "type": "string",
        "enum": ["first_response", "next_response", "resolution"],
        "description": "Which SLA clock ran out.",
    },
    "labels": {
        "type": "array",
        "items": {"type": "string"},
        "maxItems": 20,
        "description": "The chat's label names after the change, sorted without regard to case (empty: none left).",
    },
}

HEADERS = [
    ("X-Service-Event", "The event type (`type` of the body).", {"type": "string"}),
    (
        "X-Service-Signature",
        "`sha256=v1:` and the lowercase hex HMAC-SHA256 of the raw body, keyed with the subscription "
        "secret: verify it on every attempt, in constant time.",
        {"type": "string", "pattern": "^sha256=v1:[0-9a-f]{64}$"},
    ),
    (
        "X-Service-Idempotency-Key",
        "The event id (= body `id`): the same for every endpoint, retry and redelivery. Dedupe on it.",
        {"type": "string", "format": "uuid"},
    ),
    (
        "X-Service-Delivery",
        "One per endpoint and event; new on a manual redelivery.",
        {"type": "string", "format": "uuid"},
    ),
    ("X-Service-Timestamp", "Unix send time; not signed, changes per attempt.", {"type": "string"}),
    ("webhook-id", "Standard Webhooks: the event id.", {"type": "string"}),
    ("webhook-timestamp", "Standard Webhooks: Unix send time (signed).", {"type": "string"}),
    (
        "webhook-signature",
        'Standard Webhooks: `v1,` and the base64 HMAC-SHA256 of `"{webhook-id}.{webhook-timestamp}.{body}"`.',
        {"type": "string"},
    ),
]

RESPONSES = {
    "2XX": {"description": "Received. Any 2xx ends the delivery; answer quickly after queuing the work durably."},
    "default": {
        "description": "Anything else (3xx included: redirects are never followed), a timeout (15 s in all) or a "
        "transport error uses one of 4 attempts; the waits are 10, 20 and 40 s."
    },
}


def native_body_schema(event_type: str) -> dict:
    members = ("button_guid", *events.CATALOGUE[event_type])
    return {
        "type": "object",
        "title": event_type,
        "properties": {
            "id": {"type": "string", "format": "uuid", "description": "The event id (the idempotency key)."},
            "type": {"type": "string", "const": event_type, "description": "The event type."},
            "data": {
                "type": "object",
                "description": "The event's ids and discriminators; `button_guid` on every event.",
                "properties": {name: DATA_MEMBERS[name] for name in members},
                "required": list(members),
                "additionalProperties": False,
            },
        },
        "required": ["id", "type", "data"],
        "additionalProperties": False,
    }


def _person(members: dict) -> dict:
    return {"type": ["object", "null"], "properties": members}


_VISITOR = {
    **_person(
        {
            "id": _GUID,
            "name": {"type": ["string", "null"], "description": "The contact's name; null when unknown."},
            "email": {"type": ["string", "null"], "description": "The contact's e-mail address; null when unknown."},
            "phone": {"type": ["string", "null"], "description": "The contact's phone number; null when unknown."},
        }
    ),
    "description": "The contact.",
}
_AGENT_MEMBERS = {
    "id": {**_INT, "description": "The agent's id."},
    "name": {"type": ["string", "null"], "description": "The agent's name."},
    "email": {"type": ["string", "null"], "description": "The agent's e-mail address."},
}
_AGENT = {**_person(_AGENT_MEMBERS), "description": "The agent the chat is with."}
_PREVIOUS_AGENT = {**_person(_AGENT_MEMBERS), "description": "The agent the chat was with before the transfer."}

LEGACY_MEMBERS: dict[str, dict[str, dict]] = {
    "chat_updated": {"chat_id": _CHAT_ID, "visitor": _VISITOR, "agent": _AGENT, "previous_agent": _PREVIOUS_AGENT},
    "chat_finished": {"chat_id": _CHAT_ID, "visitor": _VISITOR, "reason": DATA_MEMBERS["reason"]},
    "chat_accepted": {"chat_id": _CHAT_ID, "visitor": _VISITOR, "agent": _AGENT},
    "offline_message": {
        "chat_id": _CHAT_ID,
        "visitor": _VISITOR,
        "offline_message_id": {**_INT, "description": "The offline message's id."},
        "message": {"type": "string", "description": "The text the visitor left."},
    },
    "client_updated": {"client_id": _GUID, "visitor": _VISITOR, "changed_fields": DATA_MEMBERS["changed_fields"]},
}


def legacy_body_schema(event_name: str) -> dict:
    members = {
        "event_name": {"type": "string", "const": event_name, "description": "The legacy event name."},
        "id": {"type": "string", "format": "uuid", "description": "The event id (the idempotency key)."},
        "widget_id": {"type": "string", "description": "The widget's public guid."},
        **LEGACY_MEMBERS[event_name],
    }
    return {
        "type": "object",
        "title": event_name,
        "properties": members,
        "required": list(members),
        "additionalProperties": False,
    }


def _operation(summary: str, description: str, variants: list[dict]) -> dict:
    return {
        "summary": summary,
        "description": description,
        "tags": ["webhook-subscriptions"],
        "parameters": [
            {"name": name, "in": "header", "required": True, "description": text, "schema": schema}
            for name, text, schema in HEADERS
        ],
        "requestBody": {"required": True, "content": {"application/json": {"schema": {"oneOf": variants}}}},
        "responses": RESPONSES,
    }


NATIVE_DELIVERY = OpenApiWebhook(
    name="delivery",
    decorator={
        "post": _operation(
            "A delivery (native envelope)",
            "POSTed to every active subscription listing the event, once it is enabled platform-wide "
            "(`GET /api/v1/webhook-events`). The body is `{id, type, data}`: ids and discriminators only, "
            "identical bytes on every retry. At-least-once, no ordering guarantee.",
            [native_body_schema(name) for name in catalogue.NATIVE_NAMES],
        )
    },
)

LEGACY_DELIVERY = OpenApiWebhook(
    name="legacy-delivery",
    decorator={
        "post": _operation(
            "A delivery (legacy envelope)",
            "What a subscription with `is_legacy_compat` receives instead: a body keyed by `event_name` "
            "(chat_updated = chat.transferred, chat_finished = chat.closed, chat_accepted = chat.accepted, "
            "offline_message = offline_message.created, client_updated = contact.updated), with the members "
            "the legacy platform's integrations read. Same headers and retries as the native envelope.",
            [legacy_body_schema(name) for name in catalogue.LEGACY_NAMES],
        )
    },
)
