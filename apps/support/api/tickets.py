"""Support tickets of the token's widget: the queue, detail, close and reopen. Every route passes
the support gate first (api/base.py)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import mixins
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.core.api.query import MomentField, query_data
from apps.core.api.serializers import InputSerializer, StrictCharField
from apps.core.api.views import WidgetScopedViewSet

from .. import selectors, services
from ..models import Ticket
from ..payloads import chat_payload, message_payload, ticket_payload
from . import serializers as s
from .base import SERVICE_AGENT_PARAMETER, SupportViewMixin

ORDERINGS = {
    "open": ("priority", "created_at", "id"),  # queue order: high before normal, oldest first
    "closed": ("-updated_at", "-id"),
    "all": ("-updated_at", "-id"),
}
OPENING_TRANSCRIPT_MAX = 50


class SupportTicketListQuery(InputSerializer):
    state = s.serializers.ChoiceField(
        choices=["open", "closed", "all"],
        required=False,
        default="open",
        help_text="`open` (default, in queue order: high priority first, then oldest), `closed` or `all` "
        "(most recently updated first).",
    )
    priority = s.serializers.ChoiceField(
        choices=Ticket.Priority.values, required=False, help_text="Only tickets of this priority."
    )
    reason = s.serializers.ChoiceField(
        choices=Ticket.Reason.values, required=False, help_text="Only tickets closed for this reason."
    )
    updated_since = MomentField(required=False, help_text="Only tickets updated at or after this moment.")


class TicketReopenInput(InputSerializer):
    claim_id = s.StrictRegexField(
        s.CLAIM_ID_PATTERN,
        required=False,
        help_text="The `claim_id` of your lease on the ticket's chat, when you hold one.",
    )
    note = StrictCharField(
        max_length=2000, required=False, allow_blank=True, help_text="A note for the audit, up to 2000 characters."
    )


# Closing takes what reopening takes (`claim_id`, `note`) and its own `reason`.
class TicketCloseInput(TicketReopenInput):
    reason = s.serializers.ChoiceField(
        choices=["resolved", "answered_by_email", "duplicate", "false_positive"],
        help_text="`resolved`, `answered_by_email`, `duplicate` or `false_positive`.",
    )
    duplicate_of = s.StrictIntegerField(
        min_value=1, required=False, help_text="The number of the ticket this one duplicates."
    )


class SupportTicketDoc(s.serializers.Serializer):
    number = s.serializers.IntegerField(help_text="The ticket's number, unique per widget.")
    state = s.serializers.CharField(help_text="open or closed")
    reason = s.serializers.CharField(
        allow_null=True,
        help_text=(
            "Why it was closed: `resolved`, `answered_by_email`, `duplicate` or `false_positive`; null while open."
        ),
    )
    priority = s.serializers.CharField(help_text="The ticket's priority.")
    held_for_owner = s.serializers.BooleanField(help_text="True when a reply kept the ticket open for the owner.")
    source = s.serializers.CharField(help_text="Where the ticket was filed from.")
    category = s.serializers.CharField(help_text="The ticket's category.")
    subject = s.serializers.CharField(allow_null=True, help_text="The ticket's subject; null when none.")
    duplicate_of = s.serializers.IntegerField(
        allow_null=True, help_text="The number of the ticket it duplicates; null otherwise."
    )
    chat_id = s.serializers.IntegerField(help_text="The ticket's chat.")
    account = s.SupportAccountDoc(help_text="`chat.account` of the ticket's chat.")
    created_at = s.serializers.DateTimeField(help_text="When the ticket was filed.")
    updated_at = s.serializers.DateTimeField(help_text="When the ticket last changed.")
    closed_at = s.serializers.DateTimeField(allow_null=True, help_text="When the ticket was closed; null while open.")


class SupportTicketListDoc(s.serializers.Serializer):
    data = SupportTicketDoc(many=True, help_text="The tickets.")
    next_cursor = s.serializers.CharField(allow_null=True, help_text="Opaque cursor of the next page.")


class SupportTicketDetailDoc(SupportTicketDoc):
    chat = s.SupportChatDoc(help_text="The ticket's chat, with the verified account e-mail.")
    opening_transcript = s.SupportMessageDoc(
        many=True, help_text="The ticket's first message and what followed, oldest first, at most 50."
    )
    previous_numbers = s.serializers.ListField(
        child=s.serializers.IntegerField(), help_text="The numbers of the same account's earlier tickets."
    )
    agent_notes = s.serializers.ListField(child=s.serializers.DictField(), help_text="The agents' notes on the ticket.")


class SupportTicketViewSet(SupportViewMixin, WidgetScopedViewSet, mixins.ListModelMixin, mixins.RetrieveModelMixin):
    """Tickets addressed by number."""

    queryset = Ticket.objects.all()
    lookup_field = "number"
    lookup_value_regex = r"[0-9]{1,19}"
    path_parameter_help = {"number": "The ticket's number, unique per widget."}
    audit_prefix = "tickets"
    route_scopes = {
        "list": ["support:read"],
        "retrieve": ["support:read"],
        "close": ["support:write", "support:tickets:close"],
        "reopen": ["support:write"],
    }
    idempotency_required = {"close", "reopen"}
    problem_statuses = {"list": [503], "retrieve": [503], "close": [409, 429, 503], "reopen": [409, 429, 503]}

    @classmethod
    def tenant_queryset(cls, widget):
        """The ticket of a chat whose contact is under erasure (apps.erasure) reads as missing."""
        return super().tenant_queryset(widget).live()

    def scope_queryset(self, queryset):
        return queryset.select_related("chat", "chat__contact", "chat__support_account")

    @extend_schema(
        summary="List support tickets",
        description="`state` open (default, in queue order: high priority first, then oldest), closed or all "
        "(most recently updated first); `priority`, `reason`, `updated_since`; `limit` 1 to 100, `cursor`.",
        parameters=[SupportTicketListQuery],
        responses={200: SupportTicketListDoc},
    )
    def list(self, request):
        query = self.validated(SupportTicketListQuery, data=query_data(request))
        queryset = self.get_queryset()
        if query["state"] != "all":
            queryset = queryset.filter(state=query["state"])
        if query.get("priority"):
            queryset = queryset.filter(priority=query["priority"])
        if query.get("reason"):
            queryset = queryset.filter(reason=query["reason"])
        if query.get("updated_since"):
            queryset = queryset.filter(updated_at__gte=query["updated_since"])
        self.cursor_ordering = ORDERINGS[query["state"]]
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response([ticket_payload(t) for t in page])

    @extend_schema(
        summary="Get a support ticket",
        description="The ticket with its chat (the verified account e-mail), `opening_transcript`, "
        "`previous_numbers` and `agent_notes`.",
        responses={200: SupportTicketDetailDoc},
    )
    def retrieve(self, request, number=None):
        ticket = self.get_object()
        return Response(self._detail(ticket))

    def _detail(self, ticket: Ticket) -> dict:
        chat = selectors.get_support_chat(widget=self.request.widget, chat_id=ticket.chat_id)
        transcript = selectors.ticket_transcript(ticket=ticket, limit=OPENING_TRANSCRIPT_MAX)
        return {
            **ticket_payload(ticket),
            "chat": chat_payload(chat, detail=True, token_id=self.request.auth.pk),
            "opening_transcript": [
                message_payload(m, account=getattr(chat, "support_account", None)) for m in transcript
            ],
            "previous_numbers": ticket.previous_numbers,
            "agent_notes": ticket.agent_notes,
        }

    @extend_schema(
        summary="Close a support ticket",
        description="Close an open ticket with `reason` resolved, answered_by_email, duplicate (optionally "
        "`duplicate_of`) or false_positive. Scope `support:write` or `support:tickets:close`.",
        request=TicketCloseInput,
        parameters=[SERVICE_AGENT_PARAMETER],
        responses={200: SupportTicketDetailDoc},
    )
    @action(detail=True, methods=["post"])
    def close(self, request, number=None):
        ticket = self.get_object()
        data = self.validated(TicketCloseInput)
        ticket = services.close_ticket(
            widget=request.widget,
            ticket=ticket,
            reason=data["reason"],
            service_agent=self.service_agent,
            duplicate_of=data.get("duplicate_of"),
            claim_id=data.get("claim_id"),
            note=data.get("note", ""),
        )
        return Response(self._detail(ticket))

    @extend_schema(
        summary="Reopen a support ticket",
        description="Reopen a ticket closed less than 7 days ago, same number.",
        request=TicketReopenInput,
        parameters=[SERVICE_AGENT_PARAMETER],
        responses={200: SupportTicketDetailDoc},
    )
    @action(detail=True, methods=["post"])
    def reopen(self, request, number=None):
        ticket = self.get_object()
        data = self.validated(TicketReopenInput)
        ticket = services.reopen_ticket(
            widget=request.widget,
            ticket=ticket,
            service_agent=self.service_agent,
            claim_id=data.get("claim_id"),
            note=data.get("note", ""),
        )
        return Response(self._detail(ticket))
