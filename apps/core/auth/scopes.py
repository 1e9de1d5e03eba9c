"""The one catalogue of grantable scopes (the spec's table, 44 grantable and 43 operational, and the
scopes of product-decisions.md "Wave 3" and "Wave 4").

Routes name scopes from here only; a contract test checks every route scope against it.
"""

from __future__ import annotations

# scope -> (what it grants, sensitive)
CATALOGUE: dict[str, tuple[str, bool]] = {
    "chats:read": ("read chats", False),
    "chats:write": ("close, transfer, set state, request rating", False),
    "messages:read": ("read message history", False),
    "messages:write": ("send messages, typing, read receipts as an agent", False),
    "contacts:read": ("read contacts", False),
    "contacts:write": ("update contacts", False),
    "agents:read": ("read agents, presence, invitations, external operators", False),
    "agents:write": ("invite, update, suspend, restore, remove agents; external operator writes", True),
    "agents:events:read": ("agent event log", False),
    "tags:read": ("read tags", False),
    "tags:write": ("attach tags to a contact", False),
    "files:read": ("download files", False),
    "files:write": ("upload files", False),
    "stats:read": ("aggregate and per-agent statistics", False),
    "channels:read": ("custom channel status", False),
    "channels:write": ("custom channel inbound delivery", False),
    "channels:register": ("register a custom channel (installed apps only)", True),
    "webhooks:read": ("list subscriptions", False),
    "webhooks:write": ("manage subscriptions, redeliver", False),
    "responder:inject": ("inject a reply as an external AI operator", True),
    "responder:escalate": ("conditional on POST /v1/ai/replies: caller-directed handoff", True),
    "widget:read": ("read widget settings", False),
    "widget:write": ("update widget settings, purge cache", False),
    "departments:read": ("read departments", False),
    "departments:write": ("manage departments", False),
    "messengers:read": ("read connected channels (never credentials)", False),
    "messengers:write": ("connect, disconnect messengers", True),
    "ai:read": ("read assistants, config, alerts, learning, wishes", False),
    "ai:write": ("create and update assistants, settings, operators, persona and system prompt", True),
    "ai:credentials:write": ("store third-party LLM credentials; integration binding", True),
    "ai:apply": ("approve an improvement that rewrites a live persona; tune; revert", True),
    "kb:read": ("read knowledge-base rules and sources", False),
    "kb:write": ("manage knowledge-base rules and sources", False),
    "transcripts:read": ("export a chat transcript", False),
    "account:read": ("read owning account profile and all its legal entities", False),
    "account:write": ("update name, surname, phone only", False),
    "billing:read": ("read this widget's billing records and account-wide legal entities", False),
    "billing:write": ("create, update, delete account-wide legal entities only", True),
    "partners:read": ("partner/referral data", False),
    "partners:withdraw": ("reserved, unavailable; no operation consumes it", True),
    "support:read": ("support agents: read tickets, chats, messages, own audited actions", False),
    "support:reply": ("answer a customer as the configured human support operator", True),
    "support:write": ("claim/release a chat, close without replying, reopen a ticket", False),
    "support:tickets:close": ("only POST /v1/support/tickets/{number}/close", False),
    "canned:read": ("read and render canned responses", False),
    "canned:write": ("create, change, delete canned responses", False),
    "privacy:write": ("erase a contact with its chats and files; set chat retention", True),
    "audit:read": ("read the audit log of configuration, credential and data changes", False),
    "routing:read": ("read the routing settings", False),
    "routing:write": ("change the routing settings", False),
    "sla:read": ("read SLA policies", False),
    "sla:write": ("create, change, delete SLA policies", False),
    "campaigns:read": ("read proactive messages and their statistics", False),
    "campaigns:write": ("create, change, delete proactive messages", False),
    "labels:read": ("read the widget's chat labels", False),
    "labels:write": ("create, rename, recolour, delete chat labels", False),
    "macros:read": ("read macros, shared and personal", False),
    "macros:write": ("create, change, delete macros", False),
    "automation:read": ("read automation rules and their runs", False),
    "automation:write": ("create, change, delete automation rules", False),
}

ALL_SCOPES: frozenset[str] = frozenset(CATALOGUE)
# Reserved scopes can be granted but no route accepts them.
RESERVED_SCOPES: frozenset[str] = frozenset({"partners:withdraw"})
OPERATIONAL_SCOPES: frozenset[str] = ALL_SCOPES - RESERVED_SCOPES
# Chosen by a request body, checked in the service (POST /v1/ai/replies).
CONDITIONAL_SCOPES: frozenset[str] = frozenset({"responder:escalate"})
SENSITIVE_SCOPES: frozenset[str] = frozenset(s for s, (_, sensitive) in CATALOGUE.items() if sensitive)

PRESETS: dict[str, tuple[str, ...]] = {
    # Replaces the whole selection; ai:credentials:write is granted separately.
    "ai-setup": (
        "widget:read",
        "widget:write",
        "ai:read",
        "ai:write",
        "ai:apply",
        "kb:read",
        "kb:write",
        "files:write",
        "stats:read",
    ),
    "support-agents": ("support:read", "support:reply", "support:write"),
}

assert len(ALL_SCOPES) == 60 and len(OPERATIONAL_SCOPES) == 59


def parse_scopes(text: str) -> list[str]:
    """`a,b,c` or `all` -> a sorted list; unknown names raise ValueError naming them."""
    if text.strip() == "all":
        return sorted(OPERATIONAL_SCOPES)
    scopes = {s.strip() for s in text.split(",") if s.strip()}
    unknown = sorted(scopes - ALL_SCOPES)
    if unknown:
        raise ValueError(f"unknown scopes: {', '.join(unknown)}")
    return sorted(scopes)
