"""Who answers a visitor message no person handles: the widget's active external operators when it
has one (whatever the AI switch says), else the built-in AI operator when AI is enabled
(product-decisions.md "AI providers", the external operators bullet).

The external operators live in a higher app (apps.external), which this app may not import: it
registers its dispatcher here in its `AppConfig.ready()`, the way the AI app registers its binding
lookup with apps.core.signed. The AI reply worker calls `dispatch_to_external` first and answers
only when it returns False.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from apps.chats.models import Chat, Message

logger = logging.getLogger(__name__)

# fn(chat, message) -> True when the message was dispatched to the widget's active external
# operators (the built-in AI then does nothing), False when the widget has none.
ExternalAnswerer = Callable[[Chat, Message], bool]

_external: ExternalAnswerer | None = None


def register_external_answerer(fn: ExternalAnswerer | None) -> None:
    """Called once by the external operators' app in its ready() (None unregisters, for tests)."""
    global _external
    _external = fn


def external_answerer() -> ExternalAnswerer | None:
    return _external


def dispatch_to_external(chat: Chat, message: Message) -> bool:
    """Hand the visitor's message to the widget's active external operators. True when they took
    it; False when none is registered or the widget has none active. A failing dispatcher raises:
    the worker's retry runs it again (it must be idempotent per message), and the built-in AI never
    answers a chat that belongs to external operators because their dispatch failed."""
    if _external is None:
        return False
    return bool(_external(chat, message))
