"""The console's own live push: on-commit handlers of the event bus, registered in
ConsoleConfig.ready() (the conversation frames are apps.chats.realtime's).

`chat.assigned` reaches every console of the widget as `{"event": "assigned", "chat_id",
"agent_id", "by"}`: each console re-reads its list (the chat joins the new owner's list and leaves
the one of the operator who lost it), and the new owner's console tells them the chat is theirs.
"""

from __future__ import annotations

from apps.core import events
from apps.platform.realtime import push, widget_group


def chat_assigned(event: events.Event) -> None:
    data = event.data
    push(
        [widget_group(event.widget.pk)],
        {"event": "assigned", "chat_id": data["chat_id"], "agent_id": data["agent_id"], "by": data["by"]},
    )


def register() -> None:
    events.subscribe(events.CHAT_ASSIGNED, chat_assigned, phase=events.ON_COMMIT)
