"""Data protection routes: erase and export a contact, the chat retention setting, the audit log.
Writes go through apps.privacy.services only."""

from __future__ import annotations

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.audit import selectors as audit
from apps.audit.models import AuditEntry
from apps.chats.models import Contact
from apps.core import exports
from apps.core.api.query import query_data
from apps.core.api.views import ScopedAPIView, WidgetScopedViewSet

from .. import selectors, services
from .serializers import AuditLogQuery, RetentionInput

GUID_PARAM = OpenApiParameter("id", str, OpenApiParameter.PATH, description="The contact's 32-character guid.")


# --- documentation and inputs --------------------------------------------------------------------------


class ErasureQueuedDoc(serializers.Serializer):
    status = serializers.ChoiceField(choices=["queued"], help_text="`queued`: the erasure runs in the background.")


class RetentionDoc(serializers.Serializer):
    chats_days = serializers.IntegerField(
        allow_null=True, help_text="Days a chat is kept after its last message; null keeps chats for good."
    )


class AuditActorDoc(serializers.Serializer):
    type = serializers.ChoiceField(
        choices=AuditEntry.ActorType.values, help_text="`token`, `agent`, `staff` or `system`."
    )
    id = serializers.CharField(allow_null=True, help_text="The token's, agent's or staff user's id; null for system.")
    name = serializers.CharField(help_text="A token's name, an agent's name, a staff user's login, or `system`.")


class AuditTargetDoc(serializers.Serializer):
    type = serializers.CharField(help_text="The kind of object changed.")
    id = serializers.CharField(allow_null=True, help_text="The changed object's id; null when it has none.")


class AuditEntryDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The entry's id.")
    at = serializers.DateTimeField(help_text="When it happened.")
    actor = AuditActorDoc(help_text="Who did it.")
    action = serializers.CharField(help_text="What was done.")
    target = AuditTargetDoc(help_text="What it was done to.")
    changes = serializers.DictField(help_text='{field: {from, to}}; secrets are always "[hidden]".')


# --- views ------------------------------------------------------------------------------------------------


class ContactPrivacyViewSet(WidgetScopedViewSet):
    """Erasure and export of one contact of the token's widget, addressed by guid."""

    queryset = Contact.objects.all()
    lookup_field = "guid"
    lookup_url_kwarg = "pk"
    route_scopes = {"erase": ["privacy:write"], "export": ["contacts:read"]}
    idempotency_required = {"erase"}
    problem_statuses = {"export": [503]}

    @classmethod
    def tenant_queryset(cls, widget):
        """A contact under erasure reads as missing (a second erase of it is 404)."""
        return super().tenant_queryset(widget).live()

    @extend_schema(
        summary="Erase a contact",
        parameters=[GUID_PARAM],
        request=None,
        responses={202: ErasureQueuedDoc},
        description=(
            "Queues the erasure of the contact with its chats, messages, files (the stored bytes too), visitor "
            "sessions, ratings and tags; their bodies in the webhook delivery log are redacted, statistics rollups "
            "stay. From this answer on the contact and its chats answer 404. When the worker is done it emits "
            "`contact.erased` {contact_id}. A second call on the same guid is 404."
        ),
    )
    @action(detail=True, methods=["post"])
    def erase(self, request, pk=None):
        contact = self.get_object()
        services.request_contact_erasure(widget=request.widget, contact=contact)
        return Response({"status": "queued"}, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        summary="Export a contact",
        parameters=[GUID_PARAM],
        responses={
            (200, "application/json"): OpenApiResponse(
                response=OpenApiTypes.OBJECT,
                description=(
                    "Streamed: `{exported_at, links_expire_at, contact, chats: [{...chat, messages, ratings}], files}`."
                ),
            )
        },
        description=(
            "Everything stored about the contact as one JSON document: the contact, its chats with their visible "
            "messages (oldest first; operator notes and operator-only messages are not included) and ratings, and "
            "each file with a signed download link valid one hour. At most two exports of contacts of a widget are "
            "in flight at once (each until its client has read it all or has gone): another is 429 `rate_limited` "
            "with `Retry-After`."
        ),
    )
    @action(detail=True, methods=["get"])
    def export(self, request, pk=None):
        contact = self.get_object()
        slot = exports.admit(
            selectors.CONTACT_EXPORTS, request.widget.pk, retry_after=selectors.CONTACT_EXPORT_RETRY_AFTER_SECONDS
        )
        chunks = selectors.export_contact(contact=contact)
        body = exports.Holding(chunks, slots=selectors.CONTACT_EXPORTS, slot=slot, request=request)
        response = StreamingHttpResponse(body, content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="contact-{contact.guid}.json"'
        return response


class WidgetRetentionView(ScopedAPIView):
    """GET and PUT /v1/widget/retention."""

    route_scopes = {"get": ["widget:read"], "put": ["privacy:write"]}
    idempotency_required = {"put"}

    @extend_schema(
        summary="Chat retention",
        description="How many days a chat is kept after its last message; null keeps chats for good.",
        responses={200: RetentionDoc},
    )
    def get(self, request):
        return Response({"chats_days": services.get_retention(widget=request.widget)})

    @extend_schema(
        summary="Set chat retention",
        description=(
            "`{chats_days: null or 30..3650}`. A nightly job erases, in batches, the chats whose last message is "
            "older, with the rules of a contact's erasure (files, webhook log redaction; statistics stay)."
        ),
        request=RetentionInput,
        responses={200: RetentionDoc},
    )
    def put(self, request):
        data = self.validated(RetentionInput)
        policy = services.set_retention(widget=request.widget, chats_days=data["chats_days"])
        return Response({"chats_days": policy.chats_days})


class AuditLogViewSet(WidgetScopedViewSet, mixins.ListModelMixin):
    """The audit log of the token's widget, newest first."""

    queryset = AuditEntry.objects.all()
    route_scopes = {"list": ["audit:read"]}
    cursor_ordering = ("-at", "-id")

    @extend_schema(
        summary="Audit log",
        parameters=[AuditLogQuery],
        responses={200: AuditEntryDoc(many=True)},
        description=(
            "Who changed what, newest first: tokens issued and revoked, AI credentials and settings, widget "
            "settings, business hours, support configuration, retention, webhook subscriptions, contact erasures. "
            "Filters `action`, `from`, `to` (exclusive). Rows are kept 365 days."
        ),
    )
    def list(self, request):
        query = self.validated(AuditLogQuery, data=query_data(request))
        queryset = audit.list_entries(
            widget=request.widget, action=query.get("action"), start=query.get("from"), end=query.get("to")
        )
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response([audit.entry_payload(entry) for entry in page])
