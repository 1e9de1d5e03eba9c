"""Agent assist routes: `POST /v1/chats/{id}/suggest-reply`. It lives here, not under the chats
router, because it runs the AI pipeline (a layer above the chats); config.urls includes the chats'
routes first, and none of them matches this path."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.chats.models import Chat
from apps.core.api.serializers import refuse_body
from apps.core.api.views import WidgetScopedViewSet

from .. import assist


class SuggestionSourceDoc(serializers.Serializer):
    source_ref = serializers.CharField(help_text="`upload:<id>`, `crawl:<url>` or `manual:<id>`.")
    title = serializers.CharField(help_text="The document's name, or the crawled page's address.")
    url = serializers.CharField(allow_null=True, help_text="The crawled page; null for uploads and rules.")


class SuggestionDoc(serializers.Serializer):
    text = serializers.CharField(allow_blank=True, help_text="The suggested reply; empty when there is none.")
    sources = SuggestionSourceDoc(many=True, help_text="The knowledge-base documents the suggestion was built on.")


class ChatAssistViewSet(WidgetScopedViewSet):
    """What the AI suggests to the people answering a chat of the token's widget. Changes nothing."""

    queryset = Chat.objects.all()
    route_scopes = {"suggest_reply": ["chats:write"]}
    # Not in `idempotency_required`: a suggestion posts nothing, so a repeated call has no effect to
    # guard against and needs no key.
    problem_statuses = {"suggest_reply": [409, 502, 503]}

    @classmethod
    def tenant_queryset(cls, widget):
        """A contact under erasure (apps.erasure) reads as missing, as on the chats' own routes."""
        return super().tenant_queryset(widget).live()

    @extend_schema(
        summary="Suggest a reply",
        description=(
            "Runs the AI pipeline of the widget's effective assistant (knowledge-base retrieval included when "
            "`rag_enabled`) on the chat's latest visitor message and answers the reply it would give, with the "
            "knowledge-base sources it was grounded on (`url` null but for crawled pages). Nothing is posted, "
            "nothing is sent to the visitor and no key is needed. `text` is empty when the chat has no visitor "
            "message or the assistant would hand the chat to people. No body. 409 `ai_unavailable` without an "
            "enabled assistant or an active credential; at most 30 per minute per widget (429 with "
            "`Retry-After`); 502 `provider_failure` when the provider and its backups fail."
        ),
        request=None,
        responses={200: SuggestionDoc},
    )
    @action(detail=True, methods=["post"], url_path="suggest-reply")
    def suggest_reply(self, request, pk=None):
        chat = self.get_object()
        refuse_body(request)
        suggestion = assist.suggest_reply(widget=request.widget, chat=chat)
        return Response({"text": suggestion.text, "sources": suggestion.sources})
