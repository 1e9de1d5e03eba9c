"""Who answers a visitor message no person handles: the widget's active external operators when it
has one (whatever the AI switch says), else the built-in AI operator when AI is enabled
(product-decisions.md "AI providers", the external operators bullet).

The external operators live in a higher app (apps.external), which this app may not import: it
provides the `external_answerer` port (apps.core.ports). The AI reply worker calls
`dispatch_to_external` first and answers only when it returns False.
"""

from __future__ import annotations

import logging

from apps.chats.models import Chat, Message
from apps.core import ports

logger = logging.getLogger(__name__)


def dispatch_to_external(chat: Chat, message: Message) -> bool:
    """Hand the visitor's message to the widget's active external operators. True when they took
    it; False when nothing provides the port or the widget has none active. A failing dispatcher
    raises: the worker's retry runs it again (it must be idempotent per message), and the built-in AI
    never answers a chat that belongs to external operators because their dispatch failed."""
    return bool(ports.lookup(ports.EXTERNAL_ANSWERER)(chat, message))
