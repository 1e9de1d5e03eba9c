"""Event handlers of the compat app (registered in apps.py)."""

from __future__ import annotations

from apps.core.events import Event

from . import services


def queue_client_message(event: Event) -> None:
    """message.created, in the transaction: a visitor message of a chat the compat bot serves is
    queued as a CLIENT_MESSAGE."""
    chat, message = event.obj("chat"), event.obj("message")
    if chat is None or message is None:
        return
    services.queue_client_message(widget=event.widget, chat=chat, message=message)
