"""The content negotiation of a route whose body has one fixed type (the chat transcript, the chats
export, a contact's export)."""

from __future__ import annotations

from rest_framework.negotiation import BaseContentNegotiation


class IgnoreAccept(BaseContentNegotiation):
    """The body's type is the route's whatever the client accepts; errors stay problem+json. DRF's
    default negotiation would answer 406 to `Accept: text/plain` because only JSON renders there."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None
