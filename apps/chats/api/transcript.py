"""GET /v1/chats/{id}/transcript: the chat transcript as a streamed text/plain attachment."""

from __future__ import annotations

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view

from apps.core.api.streaming import IgnoreAccept
from apps.core.api.views import WidgetScopedViewSet

from .. import transcript as service
from ..models import Chat


@extend_schema_view(
    retrieve=extend_schema(
        summary="Download a chat transcript",
    ),
)
class TranscriptViewSet(WidgetScopedViewSet):
    """The transcript of one chat of the token's widget."""

    queryset = Chat.objects.all()
    route_scopes = {"retrieve": ["transcripts:read"]}
    content_negotiation_class = IgnoreAccept

    def scope_queryset(self, queryset):
        return queryset.select_related("contact").live()  # a contact under erasure reads as missing

    @extend_schema(
        operation_id="chats_transcript_retrieve",
        parameters=[OpenApiParameter("id", OpenApiTypes.INT, OpenApiParameter.PATH, description="The chat id.")],
        description=(
            "The chat's public messages as UTF-8 plain text (no BOM), streamed as the attachment "
            "`chat-{id}-transcript.txt` without Content-Length. Private notes, operator-only e-mail "
            "and operator-to-operator messages are never included. At most 50 000 messages, 10 MiB "
            "and 64 Ki characters per body; a cut output ends with the line "
            "`[Экспорт ограничен безопасным размером]`. An internal department chat answers 403 "
            "`internal_room`."
        ),
        responses={
            (200, "text/plain"): OpenApiResponse(
                response=OpenApiTypes.STR,
                description='Streamed; `Content-Disposition: attachment; filename="chat-{id}-transcript.txt"`.',
            ),
        },
    )
    def retrieve(self, request, pk=None):
        chat = self.get_object()
        pieces = service.export_transcript(widget=request.widget, chat=chat)
        response = StreamingHttpResponse(pieces, content_type=service.CONTENT_TYPE)
        response["Content-Disposition"] = f'attachment; filename="{service.transcript_filename(chat)}"'
        return response
