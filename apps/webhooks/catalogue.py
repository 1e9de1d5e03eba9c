"""The webhook event catalogue: native names with status and data fields, the legacy vocabulary.

`Live` events are enabled platform-wide; `Wired` ones are emitted by the code and accepted in
subscriptions, but delivered only once switched on (setting WEBHOOK_LIVE_EVENTS, overridden per
event type by an EventSwitch row in Django admin).
"""

from __future__ import annotations

from django.conf import settings

from apps.core import events

TRIGGERED_BY: dict[str, str] = {
    events.MESSAGE_CREATED: "a chat message is persisted, from client or agent",
    events.CHAT_CREATED: "a new chat room is created for a first-time client",
    events.CHAT_TRANSFERRED: "a chat is transferred between agents",
    events.CHAT_CLOSED: "closed via the close endpoint, or automatically on transition into expired",
    events.RATING_CREATED: "a client submits a rating for the first time",
    events.AGENT_ONLINE: "an agent socket connects",
    events.AGENT_OFFLINE: "an agent's last socket disconnects",
    events.CHAT_ACCEPTED: "an operator answers a previously unanswered chat",
    events.OFFLINE_MESSAGE_CREATED: "a client submits the offline/callback form while no operator is connected",
    events.CONTACT_UPDATED: "a contact is updated via the contact PATCH",
    events.CONTACT_ERASED: "a contact's erasure finished (its data is deleted; contact_id is its former guid)",
    events.CHAT_ASSIGNED: "a chat's routing owner changes: routing, an operator, the API or automation "
    "(agent_id null when the chat goes back to the queue)",
    events.SLA_BREACHED: "an SLA clock of a chat passed its due time unmet (once per kind and due time)",
    events.CONTACT_MERGED: "a contact was merged into another (`from` is its former guid; its chats, sessions, tags, "
    "identity and attributes now belong to `into`)",
    events.CHAT_LABELS_CHANGED: "a chat's labels change: an operator, the API, a macro, an automation rule, "
    "or a label deleted (labels: the chat's label names after the change)",
}
# Wave 3 and Wave 4 events are Live (product-decisions.md, "Wave 3" and "Wave 4").
LIVE_BY_DEFAULT = (
    events.MESSAGE_CREATED,
    events.CONTACT_ERASED,
    events.CHAT_ASSIGNED,
    events.SLA_BREACHED,
    events.CONTACT_MERGED,
    events.CHAT_LABELS_CHANGED,
)

NATIVE_NAMES: tuple[str, ...] = tuple(events.CATALOGUE)
LEGACY_NAMES: dict[str, str] = dict(events.LEGACY_NAMES)
NATIVE_TO_LEGACY: dict[str, str] = {native: legacy for legacy, native in LEGACY_NAMES.items()}
REFUSED_NATIVE = {"chat.updated": "chat.updated is not a native event; legacy integrations use chat_updated"}


def live_by_setting() -> set[str]:
    return set(getattr(settings, "WEBHOOK_LIVE_EVENTS", LIVE_BY_DEFAULT))


def enabled_types() -> set[str]:
    """The native event types delivered now: those live by setting or switched on, less those
    switched off (EventSwitch rows)."""
    from .models import EventSwitch

    switches = list(EventSwitch.objects.values_list("event_type", "enabled"))
    switched_on = {event_type for event_type, on in switches if on}
    switched_off = {event_type for event_type, on in switches if not on}
    return ((live_by_setting() | switched_on) - switched_off) & set(NATIVE_NAMES)


def not_live(names: list[str], *, legacy: bool) -> list[str]:
    """The names among `names` (native, or legacy when `legacy`) whose event is `Wired`: accepted in
    a subscription, but not delivered until it is enabled platform-wide."""
    enabled = enabled_types()
    return [name for name in names if (LEGACY_NAMES.get(name) if legacy else name) not in enabled]


def event_names(*, legacy: bool) -> list[str]:
    """The names a subscription may list: the native ones, or the legacy ones with `is_legacy_compat`."""
    return list(LEGACY_NAMES) if legacy else list(NATIVE_NAMES)


def listing() -> list[dict]:
    enabled = enabled_types()
    rows = [
        {
            "name": name,
            "vocabulary": "native",
            "enabled": name in enabled,
            "status": "Live" if name in enabled else "Wired",
            "triggered_by": TRIGGERED_BY[name],
            "data_fields": ["button_guid", *events.CATALOGUE[name]],
            "maps_to": None,
        }
        for name in NATIVE_NAMES
    ]
    rows += [
        {
            "name": legacy,
            "vocabulary": "legacy",
            "enabled": native in enabled,
            "status": "Live" if native in enabled else "Wired",
            "triggered_by": TRIGGERED_BY[native],
            "data_fields": list(LEGACY_FIELDS[legacy]),
            "maps_to": native,
        }
        for legacy, native in LEGACY_NAMES.items()
    ]
    return rows


# Members of the legacy envelope per legacy name (see payloads.legacy_envelope).
LEGACY_FIELDS: dict[str, tuple[str, ...]] = {
    "chat_updated": ("event_name", "chat_id", "widget_id", "visitor", "agent", "previous_agent"),
    "chat_finished": ("event_name", "chat_id", "widget_id", "visitor", "reason"),
    "chat_accepted": ("event_name", "chat_id", "widget_id", "visitor", "agent"),
    "offline_message": ("event_name", "chat_id", "widget_id", "visitor", "offline_message_id", "message"),
    "client_updated": ("event_name", "client_id", "widget_id", "visitor", "changed_fields"),
}
