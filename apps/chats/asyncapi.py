"""The AsyncAPI 3.1 document of both websockets, served at /api/v1/asyncapi.yaml beside the OpenAPI
document: the visitor's socket `/ws/visitor/{button_guid}/` (apps.chats.visitor.consumers) and the
operator's `/ws/agent/` (apps.agents.consumers), every frame either side sends, the close codes and
the frame limits (apps.core.websocket).

The document describes the service: `send` operations are frames the service sends, `receive`
operations the frames it reads. tests/test_asyncapi.py keeps it in step with the code (every frame
type a consumer or a push sends, every client frame type a consumer handles, the limits and close
codes); CI validates it with the AsyncAPI Initiative's parser (.ci/asyncapi.sh).
"""

from __future__ import annotations

from urllib.parse import urlsplit

import yaml
from django.conf import settings
from django.http import HttpResponse
from django.views.decorators.http import require_safe

from apps.core.websocket import CLOSE_POLICY_VIOLATION, CLOSE_TOO_BIG, FRAME_MAX_CHARS, FRAME_WINDOW, FRAMES_PER_WINDOW

from .visitor.consumers import CLOSE_BAD_REQUEST, CLOSE_NOT_FOUND, CLOSE_UNAUTHORIZED, SOCKETS_PER_SESSION

_INT = {"type": "integer"}
_ID = {"type": "integer", "minimum": 1}
_CHAT_ID = {**_ID, "description": "The chat the frame is about."}

_FILE = {
    "type": ["object", "null"],
    "properties": {"id": _INT, "name": {"type": "string"}, "content_type": {"type": "string"}, "size": _INT},
    "required": ["id", "name", "content_type", "size"],
}
MESSAGE_SCHEMA = {
    "type": "object",
    "description": "A message as the visitor may see it (the same shape as the visitor API's message list).",
    "properties": {
        "id": _ID,
        "chat_id": _ID,
        "type": {"type": "string", "enum": ["text", "image", "file", "location", "sticker", "keyboard"]},
        "body": {"type": "string"},
        "markdown": {"type": ["string", "null"]},
        "file": _FILE,
        "url": {"type": ["string", "null"], "description": "Short-lived download URL of a file or image."},
        "coords": {
            "type": ["object", "null"],
            "properties": {
                "latitude": {"type": "number"},
                "longitude": {"type": "number"},
                "title": {"type": "string"},
            },
        },
        "sticker": {"type": ["object", "null"], "properties": {"id": {"type": "string"}, "url": {"type": "string"}}},
        "keyboard": {
            "type": ["object", "null"],
            "properties": {
                "buttons": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "label": {"type": "string"},
                            "url": {"type": "string"},
                            "style": {"type": "string", "enum": ["primary", "secondary"]},
                        },
                    },
                }
            },
        },
        "sources": {
            "type": ["array", "null"],
            "description": "The knowledge-base documents an AI answer was built on, each once (its assistant's "
            "`cite_sources`); null on every other message.",
            "items": {
                "type": "object",
                "properties": {
                    "title": {"type": "string"},
                    "url": {
                        "type": ["string", "null"],
                        "description": "The crawled page (http or https only); null for an uploaded document.",
                    },
                },
                "required": ["title", "url"],
            },
        },
        "author": {
            "type": "object",
            "properties": {
                "kind": {"type": "string", "enum": ["client", "agent", "ai", "system"]},
                "name": {
                    "type": "string",
                    "description": "The operator's display name; for the visitor's own messages the name they "
                    "gave (empty when none).",
                },
            },
            "required": ["kind", "name"],
        },
        "seen": {"type": "boolean"},
        "created_at": {"type": "string", "format": "date-time"},
    },
    "required": ["id", "chat_id", "type", "body", "author", "seen", "created_at"],
}


def _frame(event: str, members: dict, required: list[str], description: str) -> dict:
    return {
        "type": "object",
        "description": description,
        "properties": {"event": {"type": "string", "const": event}, **members},
        "required": ["event", *required],
    }


def _client_frame(frame_type: str, members: dict, required: list[str]) -> dict:
    return {
        "type": "object",
        "properties": {"type": {"type": "string", "const": frame_type}, **members},
        "required": ["type", *required],
    }


# apps.agents.services.STATUS_CHANGE_BUDGET: an operator's status changes per minute.
AGENT_STATUS_CHANGES_PER_MINUTE = 30

ERROR_CODES = [
    "invalid_frame",
    "invalid_json",
    "unknown_frame",
    "server_error",
    "not_found",
    "invalid_status",
    "rate_limited",
]

# Frames the service sends: message name -> (event, title, summary, payload schema).
SERVER_FRAMES: dict[str, dict] = {
    "messageFrame": {
        "name": "message",
        "title": "A new message",
        "summary": "A message stored in the chat: on the visitor socket only messages the visitor may see "
        "(also replayed after `since` on connect, and when the room opens); on the operator socket every "
        "message of the widget, private notes included.",
        "payload": _frame(
            "message", {"chat_id": _CHAT_ID, "message": MESSAGE_SCHEMA}, ["chat_id", "message"], "A new message."
        ),
    },
    "typingFrame": {
        "name": "typing",
        "title": "Typing indicator",
        "summary": "Someone started or stopped typing: the visitor socket sees the operators' typing, the "
        "operator socket both sides', and there the visitor's `draft` while the widget's `typing_preview` is on.",
        "payload": _frame(
            "typing",
            {
                "chat_id": _CHAT_ID,
                "state": {"type": "string", "enum": ["start", "stop"]},
                "by": {"type": "string", "description": "`client` (the visitor) or the operator side."},
                "draft": {
                    "type": "string",
                    "maxLength": 500,
                    "description": "Operator socket only, `by: client`, while `typing_preview` is on: what the visitor "
                    "has typed so far (at most 500 characters; never stored).",
                },
            },
            ["chat_id", "state", "by"],
            "Typing indicator.",
        ),
    },
    "queueFrame": {
        "name": "queue",
        "title": "Place in the queue",
        "summary": "Visitor socket: while routing makes the chat wait for an operator, its place in line and the "
        "estimated wait, sent whenever either changes (as `GET .../queue` answers them); both null once it no "
        "longer waits (an operator took it, it closed) or the widget's `show_queue_position` was turned off.",
        "payload": _frame(
            "queue",
            {
                "type": {"type": "string", "const": "queue", "description": "The frame's kind, as `event`."},
                "chat_id": _CHAT_ID,
                "position": {
                    "type": ["integer", "null"],
                    "minimum": 1,
                    "description": "1 is the next to be served; null when the chat no longer waits.",
                },
                "estimated_wait_seconds": {
                    "type": ["integer", "null"],
                    "minimum": 0,
                    "description": "The position times the median wait of the widget's last 50 assigned chats; "
                    "null when not waiting or with fewer than 5 such chats.",
                },
            },
            ["type", "chat_id", "position", "estimated_wait_seconds"],
            "Place in the queue.",
        ),
    },
    "seenFrame": {
        "name": "seen",
        "title": "Messages seen",
        "summary": "Messages up to `message_id` were seen, by the visitor (`by: client`) or an operator.",
        "payload": _frame(
            "seen",
            {"chat_id": _CHAT_ID, "message_id": _ID, "by": {"type": "string"}},
            ["chat_id", "message_id", "by"],
            "Seen marker.",
        ),
    },
    "chatFrame": {
        "name": "chat",
        "title": "Chat status changed",
        "summary": "Operator socket: a chat was closed, moved to another state or transferred. Visitor socket: "
        "its room was closed (`status: expired`; the widget says the conversation ended and may ask for a "
        "rating), a machine handed it to people (`awaiting_human: true`), and once after the replay of a room "
        "that is closed or waiting for a person. A visitor is never told `ready` or `spam`.",
        "payload": _frame(
            "chat",
            {
                "chat_id": _CHAT_ID,
                "status": {"type": "string", "enum": ["active", "ready", "expired", "spam"]},
                "awaiting_human": {
                    "type": "boolean",
                    "description": "Visitor socket only: a machine handed the chat to people and no person has "
                    "answered yet.",
                },
            },
            ["chat_id", "status"],
            "Chat status.",
        ),
    },
    "assignedFrame": {
        "name": "assigned",
        "title": "Chat assigned",
        "summary": "Operator socket: a chat's routing owner changed (routing, an operator, the API or automation; "
        "`agent_id` null when it went back to the queue). The console re-reads its list and tells the new owner.",
        "payload": _frame(
            "assigned",
            {
                "chat_id": _CHAT_ID,
                "agent_id": {"type": ["integer", "null"], "description": "The new routing owner; null: the queue."},
                "by": {"type": "string", "enum": ["routing", "agent", "api", "automation"]},
            },
            ["chat_id", "agent_id", "by"],
            "The chat's new routing owner.",
        ),
    },
    "mentionFrame": {
        "name": "mention",
        "title": "Mentioned",
        "summary": "Operator socket, to the mentioned operator's own consoles only: another operator named them "
        "with `@` in a private note. The console shows a notification and the count of its Mentions item.",
        "payload": _frame(
            "mention",
            {
                "mention_id": {**_ID, "description": "The mention (`GET /api/v1/mentions`)."},
                "chat_id": _CHAT_ID,
                "message_id": {**_ID, "description": "The private note."},
                "by_agent_id": {"type": ["integer", "null"], "description": "The note's author."},
                "by_name": {"type": "string", "description": "The author's display name."},
                "text": {"type": "string", "description": "The note's text, cut at 200 characters."},
                "unread": {"type": "integer", "minimum": 0, "description": "The operator's unread mentions now."},
            },
            ["mention_id", "chat_id", "message_id", "by_agent_id", "by_name", "text", "unread"],
            "A mention of this operator.",
        ),
    },
    "readyFrame": {
        "name": "ready",
        "title": "Registered",
        "summary": "Operator socket only, once: the socket counts for the operator's presence from now on.",
        "payload": _frame(
            "ready",
            {
                "operator_id": _ID,
                "widget_id": _ID,
                "status": {"type": "string", "enum": ["online", "away"]},
            },
            ["operator_id", "widget_id", "status"],
            "Registered; `status` is the operator's presence switch as stored.",
        ),
    },
    "statusFrame": {
        "name": "status",
        "title": "Presence switched",
        "summary": "Operator socket: the answer to a `status` frame, naming the presence now stored "
        "(`online`: active, `away`: relaxation).",
        "payload": _frame(
            "status", {"status": {"type": "string", "enum": ["online", "away"]}}, ["status"], "Presence."
        ),
    },
    "pongFrame": {
        "name": "pong",
        "title": "Pong",
        "summary": "The answer to a `ping` frame.",
        "payload": _frame("pong", {}, [], "Pong."),
    },
    "errorFrame": {
        "name": "error",
        "title": "A client frame was refused",
        "summary": "The answer to a client frame that breaks a rule; the socket stays open. `invalid_json`: not "
        "JSON; `invalid_frame`: not an object, a binary frame or bad members; `unknown_frame`: an unknown "
        "`type`; `not_found`: `seen` names no message of this conversation; `invalid_status`: a `status` frame "
        "names neither online nor away; `rate_limited`: a `status` frame past the operator's "
        f"{AGENT_STATUS_CHANGES_PER_MINUTE} changes a minute "
        "(the detail says when to retry); `server_error`: retry later.",
        "payload": _frame(
            "error",
            {"code": {"type": "string", "examples": ERROR_CODES}, "detail": {"type": "string"}},
            ["code", "detail"],
            "Refused frame.",
        ),
    },
}

# Frames the service reads.
CLIENT_FRAMES: dict[str, dict] = {
    "typingClientFrame": {
        "name": "typing",
        "title": "The visitor is typing",
        "summary": "Visitor socket: forwarded to the operators about once per 5 s per chat, once the room exists. "
        "With the widget's `typing_preview` on, `draft` (the text typed so far, cut to 500 characters) reaches the "
        "operator sockets, at most two frames a second per socket; it is never stored, logged or sent to webhooks.",
        "payload": _client_frame(
            "typing",
            {"state": {"type": "string", "enum": ["start", "stop"]}, "draft": {"type": "string"}},
            ["state"],
        ),
    },
    "seenClientFrame": {
        "name": "seen",
        "title": "The visitor has seen messages",
        "summary": "Visitor socket: operator messages up to `message_id` (a message of the visitor's conversation) "
        "are marked seen.",
        "payload": _client_frame("seen", {"message_id": _ID}, ["message_id"]),
    },
    "statusClientFrame": {
        "name": "status",
        "title": "Switch presence",
        "summary": "Operator socket: the console's Online/Away switch (stored as the agent's status active / "
        "relaxation); answered by a `status` frame, or `error` `invalid_status` for another word. The status "
        "already stored changes nothing. An operator changes status at most "
        f"{AGENT_STATUS_CHANGES_PER_MINUTE} times a minute over all their "
        "sockets of the widget: past that the frame is answered `error` `rate_limited`, nothing changes and "
        "the socket stays open.",
        "payload": _client_frame("status", {"status": {"type": "string", "enum": ["online", "away"]}}, ["status"]),
    },
    "pingClientFrame": {
        "name": "ping",
        "title": "Ping",
        "summary": "Both sockets: answered `pong`. On the operator socket it is also a presence heartbeat.",
        "payload": _client_frame("ping", {}, []),
    },
}

VISITOR_SENDS = ["messageFrame", "chatFrame", "typingFrame", "seenFrame", "queueFrame", "pongFrame", "errorFrame"]
VISITOR_READS = ["typingClientFrame", "seenClientFrame", "pingClientFrame"]
AGENT_SENDS = [
    "readyFrame",
    "messageFrame",
    "chatFrame",
    "assignedFrame",
    "mentionFrame",
    "typingFrame",
    "seenFrame",
    "statusFrame",
    "pongFrame",
    "errorFrame",
]
AGENT_READS = ["statusClientFrame", "pingClientFrame"]

# Close codes per socket (the operator socket's are apps.agents.consumers', kept in step by the test).
AGENT_SOCKETS_PER_USER = 20  # apps.agents.consumers.SOCKETS_PER_USER
VISITOR_CLOSE_CODES = {
    CLOSE_BAD_REQUEST: "`since` is not a message id",
    CLOSE_UNAUTHORIZED: "missing, unknown or foreign `session`, or the contact's erasure was accepted while the "
    "socket was open: start a new session",
    CLOSE_NOT_FOUND: "no widget has this `button_guid`",
    CLOSE_POLICY_VIOLATION: f"too many frames ({FRAMES_PER_WINDOW} per {FRAME_WINDOW:g} s), or the session "
    f"already holds {SOCKETS_PER_SESSION} sockets, or the client address VISITOR_SOCKETS_PER_ADDRESS",
    CLOSE_TOO_BIG: f"a frame over {FRAME_MAX_CHARS} characters",
}
AGENT_CLOSE_CODES = {
    4400: "bad `widget`, or none while the user serves several widgets",
    4401: "no logged-in active user, or the session ended (checked on every heartbeat)",
    4403: "the user is no (longer an) active operator of the widget",
    CLOSE_POLICY_VIOLATION: f"too many frames ({FRAMES_PER_WINDOW} per {FRAME_WINDOW:g} s), or the user already "
    f"holds {AGENT_SOCKETS_PER_USER} operator sockets (every widget and tab together)",
    CLOSE_TOO_BIG: f"a frame over {FRAME_MAX_CHARS} characters",
}

LIMITS = (
    f"Client frames are JSON text frames holding an object with a `type`, at most {FRAME_MAX_CHARS} characters; "
    f"a socket may send {FRAMES_PER_WINDOW} frames per {FRAME_WINDOW:g} s, valid or not."
)


def _codes(codes: dict[int, str]) -> str:
    return "Close codes: " + "; ".join(f"`{code}` {text}" for code, text in sorted(codes.items())) + "."


def _message_refs(channel: str, names: list[str]) -> list[dict]:
    return [{"$ref": f"#/channels/{channel}/messages/{name}"} for name in names]


def document(*, host: str = "127.0.0.1:8000", protocol: str = "ws") -> dict:
    return {
        "asyncapi": "3.1.0",
        "info": {
            "title": "Chat Widget Service websockets",
            "version": "1.0.0",
            "description": "The two websockets of the chat widget service. The REST and visitor HTTP APIs are in "
            "the OpenAPI document (`/api/v1/schema/`). Frames are JSON text frames: the service's carry "
            "`event`, the client's `type`. Pushes are best effort: after a reconnect the visitor passes "
            "`since` (the last message id seen) and receives what it missed; a console re-reads the lists.",
        },
        "defaultContentType": "application/json",
        "servers": {
            "service": {
                "host": host,
                "protocol": protocol,
                "description": "The service that served this document: `PUBLIC_BASE_URL` when it is set, else "
                "the host and scheme the document was requested with (`wss` behind TLS).",
            }
        },
        "channels": {
            "visitor": {
                "address": "/ws/visitor/{button_guid}/",
                "title": "Visitor socket",
                "description": "What the embed script listens on for the visitor's conversation: the service's "
                f"frames for the visitor's room only. {LIMITS} {_codes(VISITOR_CLOSE_CODES)} A refused socket is "
                "accepted and then closed, so a browser can read the code.",
                "parameters": {"button_guid": {"description": "The widget's public guid."}},
                "messages": {name: {"$ref": f"#/components/messages/{name}"} for name in VISITOR_SENDS + VISITOR_READS},
                "bindings": {
                    "ws": {
                        "method": "GET",
                        "query": {
                            "type": "object",
                            "properties": {
                                "session": {
                                    "type": "string",
                                    "description": "The visitor API's `session_token` "
                                    "(`POST /api/visitor/v1/{button_guid}/sessions`).",
                                },
                                "since": {
                                    "type": "string",
                                    "pattern": "^[0-9]+$",
                                    "description": "The last message id the visitor has: the messages after it are "
                                    "sent first (a replay; a message is never sent twice on one socket).",
                                },
                            },
                            "required": ["session"],
                        },
                        "bindingVersion": "0.1.0",
                    }
                },
            },
            "agent": {
                "address": "/ws/agent/",
                "title": "Operator socket",
                "description": "An operator console's socket, authenticated by the Django session cookie (the "
                "Origin must be an allowed host). Live presence: the operator's first socket emits `agent.online`, "
                f"the last one `agent.offline`. {LIMITS} {_codes(AGENT_CLOSE_CODES)}",
                "messages": {name: {"$ref": f"#/components/messages/{name}"} for name in AGENT_SENDS + AGENT_READS},
                "bindings": {
                    "ws": {
                        "method": "GET",
                        "query": {
                            "type": "object",
                            "properties": {
                                "widget": {
                                    "type": "string",
                                    "pattern": "^[0-9]+$",
                                    "description": "The widget id; required when the user serves several widgets.",
                                }
                            },
                        },
                        "bindingVersion": "0.1.0",
                    }
                },
            },
        },
        "operations": {
            "sendToVisitor": {
                "action": "send",
                "title": "Frames to the visitor",
                "channel": {"$ref": "#/channels/visitor"},
                "messages": _message_refs("visitor", VISITOR_SENDS),
            },
            "receiveFromVisitor": {
                "action": "receive",
                "title": "Frames from the visitor",
                "channel": {"$ref": "#/channels/visitor"},
                "messages": _message_refs("visitor", VISITOR_READS),
            },
            "sendToOperator": {
                "action": "send",
                "title": "Frames to the operator console",
                "channel": {"$ref": "#/channels/agent"},
                "messages": _message_refs("agent", AGENT_SENDS),
            },
            "receiveFromOperator": {
                "action": "receive",
                "title": "Frames from the operator console",
                "channel": {"$ref": "#/channels/agent"},
                "messages": _message_refs("agent", AGENT_READS),
            },
        },
        "components": {"messages": {**SERVER_FRAMES, **CLIENT_FRAMES}},
    }


def document_yaml(*, host: str = "127.0.0.1:8000", protocol: str = "ws") -> str:
    return yaml.safe_dump(document(host=host, protocol=protocol), sort_keys=False, allow_unicode=True, width=120)


def _server(request) -> tuple[str, str]:
    """The websockets' host and protocol as a client reaches them: PUBLIC_BASE_URL, else the request's
    own (its host already checked against ALLOWED_HOSTS; the scheme from the trusted proxy header)."""
    if settings.PUBLIC_BASE_URL:
        base = urlsplit(settings.PUBLIC_BASE_URL)
        return base.netloc, "wss" if base.scheme == "https" else "ws"
    return request.get_host(), "wss" if request.is_secure() else "ws"


@require_safe
def asyncapi_yaml(request):
    """GET /api/v1/asyncapi.yaml: public, like the OpenAPI document."""
    host, protocol = _server(request)
    return HttpResponse(document_yaml(host=host, protocol=protocol), content_type="application/yaml; charset=utf-8")
