"""External (webhook) operators of the token's widget, and the operators' reply callback."""

from __future__ import annotations

from django.db.models import Count, Q
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.core.api.views import ScopedAPIView, WidgetScopedViewSet
from apps.core.errors import NotFound
from apps.webhooks.models import Delivery

from .. import selectors, services
from ..models import ExternalOperator, Probe
from . import serializers as s

SIGNED_CALLS_DOC = (
    "The service POSTs `{id, type, causation_id, data: {button_guid, chat_id, message_id, client_id, text}}` "
    "to the operator's URL, `type` being `chat.assigned` (its first call about a chat), `message.created` "
    "(the visitor's next messages) or `delivery.test` (a probe: null chat fields, empty text), with the "
    "webhook headers: `X-Service-Event`, `X-Service-Signature: sha256=v1:<hex HMAC-SHA256 of the raw body "
    "keyed with the operator's signing secret>`, `X-Service-Idempotency-Key` (= `id`), `X-Service-Delivery`, "
    "`X-Service-Timestamp` and the Standard Webhooks headers. Retries, the attempt log and redelivery are "
    "the webhook engine's (4 attempts, waits of 10, 20 and 40 s). After a secret rotation the previous "
    "secret keeps signing beside the new one for the overlap window (3600 s by default): "
    "`X-Service-Signature-Previous` carries it and `webhook-signature` holds both entries. The operator "
    "answers with `POST /api/v1/ai/replies`."
)


def operator_payload(op: ExternalOperator) -> dict:
    rotating = op.state == ExternalOperator.State.ROTATING
    return {
        "public_id": op.public_id,
        "name": op.name,
        "url": op.url,
        "state": op.state,
        "agent_id": op.agent_id,
        "draining_url": op.draining.url if rotating and op.draining_id else None,
        "draining_pending": getattr(op, "draining_pending", 0) if rotating else 0,
        "resume_state": op.resume_state if rotating else None,
        "created_at": op.created_at.isoformat(),
        "updated_at": op.updated_at.isoformat(),
    }


def probe_payload(probe: Probe, operator: ExternalOperator) -> dict:
    row = probe.delivery
    return {
        "public_id": probe.public_id,
        "operator_id": operator.public_id,
        "status": row.status,
        "delivery_id": str(row.delivery_id),
        "causation_id": str(probe.causation_id),
        "url": row.endpoint.url,
        "attempts": [
            {
                "number": a.number,
                "at": a.started_at.isoformat(),
                "status_code": a.status_code,
                "error": a.error or None,
                "duration_ms": a.duration_ms,
            }
            for a in selectors.probe_attempts(probe)
        ],
        "next_attempt_at": (
            row.next_attempt_at.isoformat()
            if row.status == Delivery.Status.PENDING and row.next_attempt_at is not None
            else None
        ),
        "created_at": probe.created_at.isoformat(),
    }


@extend_schema_view(
    list=extend_schema(
        summary="List external operators",
        description="The widget's external (webhook) operators, newest first (deleted ones never). " + SIGNED_CALLS_DOC,
    ),
    retrieve=extend_schema(
        summary="Get an external operator",
        description="One operator by `public_id`; a foreign, unknown or deleted one is 404.",
    ),
    partial_update=extend_schema(
        summary="Rename an external operator or replace its URL",
        description=(
            "Merge-safe `{name?, url?}`. A new `url` (https, resolving to a public address: 422 otherwise) takes "
            "every call from now on, signed with the same secret; calls still queued for the old URL drain there "
            "while the operator is `rotating` (it returns to its state when none are left; `force-drain` abandons "
            "them). 409 for a revoked operator, or a URL change while a rotation still drains."
        ),
    ),
    destroy=extend_schema(
        summary="Delete a revoked external operator",
        description="Soft delete: only a `revoked` operator (409 otherwise); it disappears from every read.",
    ),
    tests=extend_schema(
        summary="Send a delivery.test probe",
        description=(
            "Enqueues one synthetic `delivery.test` call to the operator's current URL, signed like every call, "
            "and answers 202 with the probe to poll. One pending probe at a time (409 `test_pending`); 409 for a "
            "revoked (`operator_revoked`) or paused (`operator_paused`) operator. The body is empty or `{}`."
        ),
    ),
    test_result=extend_schema(
        summary="Poll a delivery.test probe",
        description=(
            "The probe's state (`pending`, `delivered`, `failed`, `skipped`), each attempt (HTTP status, error, "
            "duration) and when the next is due. 404 for a probe of another operator."
        ),
    ),
    lifecycle=extend_schema(
        summary="Move an external operator through its lifecycle",
        description=(
            "`{state}`: `testing` (no visitor messages; probes go), `active` (receives visitor messages of chats "
            "no person handles), `paused` (every delivery held, queued ones included; reversible) or `revoked`, "
            "the kill switch: final (409 `operator_revoked` for any move out of it) and every queued call of "
            "the operator is skipped at once. Moving to the current state changes nothing. During a rotation the "
            "move applies to both URLs and the operator stays `rotating` until the drain ends (`resume_state`)."
        ),
    ),
    force_drain=extend_schema(
        summary="Break a stuck rotation",
        description=(
            "Abandons the calls still queued for the old URL (skipped, never sent: `abandoned` counts them) and "
            "returns the operator to its state. 409 `not_rotating` when nothing drains. The body is empty or `{}`."
        ),
    ),
)
class ExternalOperatorViewSet(WidgetScopedViewSet, mixins.ListModelMixin, mixins.RetrieveModelMixin):
    __doc__ = "External (webhook) operators of the token's widget. " + SIGNED_CALLS_DOC

    queryset = ExternalOperator.objects.filter(deleted_at=None)
    lookup_field = "public_id"
    lookup_value_regex = r"[A-Za-z0-9_]+"
    path_parameter_help = {
        "public_id": "The operator's `public_id` (`xop_...`); a foreign, unknown or deleted one is 404."
    }
    route_scopes = {
        "list": ["agents:read"],
        "retrieve": ["agents:read"],
        "partial_update": ["agents:write"],
        "destroy": ["agents:write"],
        "tests": ["agents:write"],
        "test_result": ["agents:read"],
        "lifecycle": ["agents:write"],
        "force_drain": ["agents:write"],
    }
    idempotency_required = {"partial_update", "tests", "lifecycle", "force_drain"}
    problem_statuses = {
        "partial_update": [409],
        "destroy": [409],
        "tests": [409],
        "lifecycle": [409],
        "force_drain": [409],
    }

    def scope_queryset(self, queryset):
        return queryset.select_related("draining").annotate(
            draining_pending=Count(
                "draining__deliveries", filter=Q(draining__deliveries__status=Delivery.Status.PENDING)
            )
        )

    def _fresh(self, op: ExternalOperator) -> dict:
        return operator_payload(self.get_queryset().get(pk=op.pk))

    @extend_schema(responses={200: s.ExternalOperatorDoc(many=True)})
    def list(self, request):
        page = self.paginate_queryset(self.get_queryset().order_by("-created_at", "-id"))
        return self.get_paginated_response([operator_payload(op) for op in page])

    @extend_schema(responses={200: s.ExternalOperatorDoc})
    def retrieve(self, request, public_id=None):
        return Response(operator_payload(self.get_object()))

    @extend_schema(request=s.ExternalOperatorPatchInput, responses={200: s.ExternalOperatorDoc})
    def partial_update(self, request, public_id=None):
        op = self.get_object()
        data = self.validated(s.ExternalOperatorPatchInput, partial=True)
        op = services.update_external_operator(widget=request.widget, operator=op, changes=dict(data))
        return Response(self._fresh(op))

    @extend_schema(responses={204: None})
    def destroy(self, request, public_id=None):
        services.delete_external_operator(widget=request.widget, operator=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=s.EmptyInput, responses={202: s.ProbeDoc})
    @action(detail=True, methods=["post"])
    def tests(self, request, public_id=None):
        op = self.get_object()
        self.validated(s.EmptyInput, data=request.data or {})
        probe = services.send_probe(widget=request.widget, operator=op)
        return Response(probe_payload(probe, op), status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        parameters=[OpenApiParameter("test_public_id", str, OpenApiParameter.PATH, description="`xtest_...`.")],
        responses={200: s.ProbeDoc},
    )
    @action(detail=True, methods=["get"], url_path=r"tests/(?P<test_public_id>[A-Za-z0-9_]+)")
    def test_result(self, request, public_id=None, test_public_id=None):
        op = self.get_object()
        probe = selectors.get_probe(widget=request.widget, operator=op, public_id=test_public_id)
        if probe is None:
            raise NotFound()
        return Response(probe_payload(probe, op))

    @extend_schema(request=s.LifecycleInput, responses={200: s.ExternalOperatorDoc})
    @action(detail=True, methods=["post"])
    def lifecycle(self, request, public_id=None):
        op = self.get_object()
        data = self.validated(s.LifecycleInput)
        op = services.set_lifecycle(widget=request.widget, operator=op, state=data["state"])
        return Response(self._fresh(op))

    @extend_schema(request=s.EmptyInput, responses={200: s.ForceDrainDoc})
    @action(detail=True, methods=["post"], url_path="force-drain")
    def force_drain(self, request, public_id=None):
        op = self.get_object()
        self.validated(s.EmptyInput, data=request.data or {})
        op, abandoned = services.force_drain(widget=request.widget, operator=op)
        return Response({**self._fresh(op), "abandoned": abandoned})


@extend_schema_view(
    post=extend_schema(
        summary="Reply as an external operator",
        description=(
            "The answer to a signed call: `{room_id, causation_id, content?, escalate?}` with a token holding "
            "`responder:inject`. `escalate: true`, or `content` containing the exact `[KEY_TO_OPERATOR]` marker, "
            "also needs `responder:escalate`: without it 403 `escalation_scope_required` before the causation is "
            "read (the callback stays usable). An unknown or another widget's `causation_id` is the same 404 "
            "`causation_not_found`; a binding that does not match the call (another room, an operator revoked "
            "since, or one whose agent was suspended or deleted through the agents routes) is 409 `binding_mismatch` "
            "and consumes nothing. A valid reply consumes the call once (a second "
            "one is 409 `causation_consumed`): the content becomes the operator's message, or, for escalation, "
            "the marker or empty content, the chat is handed to people (`handed_off`). When a person took the "
            "chat meanwhile nothing is posted (`discarded`). "
            "Platform safety floors (the same checks as the built-in AI operator's replies, `apps.ai.reply_safety`) "
            "need only the base scope and never post the content: the chat is handed to people (`handed_off`) "
            "when the visitor's message explicitly asks for a person (a human, a live agent, an operator, in the "
            "seven languages), or the content holds something credential-shaped (an API token `cwt_`, a visitor "
            "session token `cvs_`, a webhook secret `whsec_`, a provider key `sk-`, `AIza`, `AKIA`, `gh?_`, "
            "`xox?-`, a private key block) or this operator's own signing secret (current, or the previous one "
            "within its overlap window). Empty or whitespace-only content hands off as well."
        ),
    ),
)
class ReplyView(ScopedAPIView):
    """The external operators' reply callback."""

    route_scopes = {"post": ["responder:inject"]}
    problem_statuses = {"post": [404, 409]}

    @extend_schema(request=s.ExternalReplyInput, responses={202: s.ExternalReplyDoc})
    def post(self, request):
        data = self.validated(s.ExternalReplyInput)
        result = services.accept_reply(
            widget=request.widget,
            scopes=request.user.scopes,
            room_id=data["room_id"],
            causation_id=data["causation_id"],
            content=data.get("content"),
            escalate=data.get("escalate", False),
        )
        return Response(
            {
                "outcome": result.outcome,
                "message_id": result.message.pk if result.message else None,
                "room_id": data["room_id"],
            },
            status=status.HTTP_202_ACCEPTED,
        )
