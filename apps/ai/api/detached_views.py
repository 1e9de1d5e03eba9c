"""GET and POST /v1/ai/assistants/{id}/test: the free inspection and the detached test.

The POST is served by an async view (`assistant_test`) so the provider call (up to 45 s) waits on
the event loop, not on a web thread: the synchronous parts (authentication, scopes, input rules,
admission, the idempotency claim; then recording the result) run through the DRF view below in
short thread hops, and only the provider call is awaited in between.

Database connections: the hops go through `apps.ai.api.sync_gate` (a gate of AI_TEST_DB_HOPS per process,
connections borrowed for the hop and given back before the provider is awaited), so no test holds a
connection while the provider thinks; a shut gate or a refused connection answers 503
`test_unavailable` with `Retry-After`, never 500.
"""

from __future__ import annotations

import logging

from asgiref.sync import sync_to_async
from django.db import InterfaceError, OperationalError
from django.http import JsonResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from apps.core import idempotency
from apps.core.api.views import ScopedAPIView
from apps.core.errors import problem_response

from .. import detached, errors
from . import sync_gate

logger = logging.getLogger(__name__)

RATE_HEADERS = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")


class TestInputDoc(serializers.Serializer):
    question = serializers.CharField(
        min_length=1,
        max_length=4000,
        help_text="The visitor's question, 1 to 4000 characters with a non-whitespace character.",
    )
    history = serializers.ListField(
        child=serializers.DictField(),
        max_length=20,
        required=False,
        help_text=(
            "Earlier turns, at most 20 objects of exactly `role` (`user` or `assistant`) and `content` (default empty)."
        ),
    )
    operator_id = serializers.IntegerField(min_value=1, required=False, help_text="The AI operator to simulate.")
    locale = serializers.ChoiceField(
        choices=detached.LOCALES,
        required=False,
        help_text="The visitor's language; omitted: the message's language, else the widget's.",
    )
    operators = serializers.ChoiceField(
        choices=detached.OPERATOR_STATES,
        required=False,
        help_text="Operator presence to assume: `online`, `offline` or `unknown`; omitted: presence is read.",
    )


class OperatorsDoc(serializers.Serializer):
    state = serializers.ChoiceField(choices=detached.OPERATOR_STATES, help_text="The operator presence the test used.")
    source = serializers.ChoiceField(
        choices=["request", "presence", "presence_unavailable"],
        help_text="`request` (sent as `operators`), `presence` (read) or `presence_unavailable`.",
    )


class EscalationDoc(serializers.Serializer):
    escalate = serializers.BooleanField(help_text="True when the simulated decision hands the chat to people.")
    reason = serializers.CharField(allow_null=True, help_text="Why; null without escalation.")
    trigger = serializers.CharField(
        allow_null=True, help_text="The escalation trigger that matched; null when none did."
    )


class TestResultDoc(serializers.Serializer):
    answer = serializers.CharField(help_text="The safe simulated final text.")
    assistant_id = serializers.IntegerField(help_text="The tested assistant.")
    operator_id = serializers.IntegerField(allow_null=True, help_text="The simulated AI operator; null when none.")
    assistant_enabled = serializers.BooleanField(help_text="True when the assistant is enabled.")
    configured_provider = serializers.CharField(help_text="The provider the configuration resolves to.")
    configured_model = serializers.CharField(
        allow_null=True, help_text="The model the configuration resolves to; null when unset."
    )
    provider = serializers.CharField(help_text="The provider that answered.")
    model = serializers.CharField(help_text="The model that answered.")
    provider_path = serializers.ChoiceField(
        choices=["primary", "fallback"], help_text="`primary`, or `fallback` when a declared backup answered."
    )
    locale = serializers.ChoiceField(choices=detached.LOCALES, help_text="The language the test used.")
    operators = OperatorsDoc(help_text="The operator presence the test used and where it came from.")
    presence_context_enabled = serializers.BooleanField(help_text="The widget's `presence_context_enabled`.")
    rag_status = serializers.ChoiceField(
        choices=["disabled", "unavailable", "empty", "included"],
        help_text="`disabled`, `unavailable`, `empty` or `included`: what the knowledge base gave.",
    )
    transformation = serializers.ChoiceField(
        choices=[
            "answer",
            "social_reply",
            "empty_response",
            "answer_only_recovery",
            "untrusted_handoff_fallback",
            "escalation_outcome",
        ],
        help_text=(
            "What became of the provider's answer: `answer`, `social_reply`, `empty_response`, "
            "`answer_only_recovery`, `untrusted_handoff_fallback` or `escalation_outcome`."
        ),
    )
    classifier = serializers.ChoiceField(
        choices=["not_needed", "unavailable", "escalate", "no_escalation"],
        help_text="`not_needed`, `unavailable`, `escalate` or `no_escalation`.",
    )
    escalation = EscalationDoc(help_text="The simulated escalation decision.")
    outcome = serializers.ChoiceField(
        choices=["handover_notice", "handover_offline", "handover_unknown"],
        allow_null=True,
        help_text="The handover phrase used: `handover_notice`, `handover_offline`, `handover_unknown`, or null.",
    )
    offline_outcome_suppressed = serializers.BooleanField(
        help_text=(
            "True when nobody was online but `presence_context_enabled` is off, so `handover_unknown` "
            "replaced `handover_offline`."
        )
    )
    provider_http_operations = serializers.IntegerField(
        help_text="How many provider HTTP operations the test made (at most 10)."
    )
    latency_ms = serializers.FloatField(help_text="The provider completion's latency, in milliseconds.")
    chat_created = serializers.BooleanField(help_text="Always false: the test creates no chat.")
    limitations = serializers.ListField(child=serializers.CharField(), help_text="What the test does not cover.")


class TestResultEnvelope(serializers.Serializer):
    data = TestResultDoc(help_text="The test's result.")


class InspectionDoc(serializers.Serializer):
    assistant_id = serializers.IntegerField(help_text="The inspected assistant.")
    operator_id = serializers.IntegerField(
        allow_null=True, help_text="The AI operator named in `operator_id`; null when none."
    )
    assistant_enabled = serializers.BooleanField(help_text="True when the assistant is enabled.")
    configured_provider = serializers.CharField(help_text="The provider the configuration resolves to.")
    configured_model = serializers.CharField(
        allow_null=True, help_text="The model the configuration resolves to; null when unset."
    )
    configuration_resolved = serializers.BooleanField(help_text="Always true: the configuration resolved.")
    provider_verified = serializers.BooleanField(help_text="Always false: the inspection calls no provider.")
    provider_http_operations = serializers.IntegerField(help_text="Always 0.")
    chat_created = serializers.BooleanField(help_text="Always false.")
    limits = serializers.DictField(child=serializers.IntegerField(), help_text="The detached test's limits, by name.")
    limitations = serializers.ListField(child=serializers.CharField(), help_text="What the inspection does not cover.")


class InspectionEnvelope(serializers.Serializer):
    data = InspectionDoc(help_text="The inspection's result.")


ASSISTANT_ID_PARAM = OpenApiParameter(
    "id", int, OpenApiParameter.PATH, description="The assistant's id; one this widget does not have is 404."
)

RULES = (
    "Input: a JSON object of at most 131072 bytes; `question` and each history `content` are strings of 1 to 4000 "
    "characters with a non-whitespace character and no control characters, together at most 20000; `history` "
    "(default empty) holds at most 20 objects of exactly `role` (user or assistant) and `content`; `operator_id` a "
    "positive integer; `locale` one of ru, en, el, de, es, ar, zh (omitted: the message's language, else the "
    "widget's); `operators` online, offline or unknown (omitted: presence is read). Unknown members and null are "
    "refused (422 `invalid_input`), a repeated member is 422 `duplicate_member`, malformed JSON 400 "
    "`invalid_json`. No override of model, provider, key, endpoint, prompt or room."
)


class AssistantTestView(ScopedAPIView):
    """The inspection (GET) and the synchronous phases of the detached test (POST)."""

    route_scopes = {"get": ["ai:read"], "post": ["ai:write"]}
    # The detached test validates and claims its key itself (apps.ai.detached: own codes, kept 86 400 s).
    idempotency_required = {"post"}
    max_body_bytes = detached.MAX_BODY_BYTES
    problem_statuses = {
        "get": [404, 409, 422, 503],
        "post": [404, 409, 413, 415, 422, 502, 503, 504],
    }

    def initial(self, request, *args, **kwargs):
        self.idempotency_required = frozenset()  # instance only: the class keeps it for the document
        super().initial(request, *args, **kwargs)

    def handle_exception(self, exc):
        # A refused or lost database connection (PostgreSQL's max_connections reached, a restart) is
        # transient: 503 with Retry-After, never 500. Nothing was paid for: the provider call comes later.
        if isinstance(exc, OperationalError | InterfaceError):
            exc = sync_gate.database_unavailable()
        return super().handle_exception(exc)

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if request.method in ("GET", "HEAD"):
            response["Cache-Control"] = "no-store"
        return response

    @extend_schema(
        summary="Inspect an assistant's test configuration",
        description="Free: resolves the assistant, its operator (`operator_id` when several run it) and the credential "
        "without any provider call. Query: only `operator_id`, a canonical positive decimal integer, once; the raw "
        "query at most 128 bytes; no body, content type or idempotency key (each 422 `invalid_input`). Errors: 404 "
        "`assistant_not_found` / `operator_not_found`, 409 `ambiguous_operator` / `unsupported_transport` / "
        "`credential_unavailable`. Every answer is `Cache-Control: no-store`.",
        parameters=[
            ASSISTANT_ID_PARAM,
            OpenApiParameter("operator_id", int, required=False, description="The AI operator to simulate."),
        ],
        responses={200: InspectionEnvelope},
    )
    def get(self, request, pk=None):
        problems = {}
        if request.body:
            problems["body"] = ["The inspection takes no body."]
        # Django's test client labels every bodiless request application/octet-stream.
        if request.META.get("CONTENT_TYPE", "") not in ("", "application/octet-stream"):
            problems["content-type"] = ["The inspection takes no content type."]
        if request.META.get(idempotency.META_KEY) is not None:
            problems[idempotency.HEADER] = ["The inspection takes no idempotency key."]
        if problems:
            raise errors.InvalidInput("The inspection takes no body.", errors=problems)
        operator_id = detached.parse_inspection_query(request.META.get("QUERY_STRING", ""))
        return Response({"data": detached.inspection(request.widget, assistant_id=pk, operator_id=operator_id)})

    @extend_schema(
        summary="Test an assistant (detached)",
        description="Runs the AI operator's real pipeline on `question` (prompt assembly, retrieval when enabled, the "
        "provider with its backup chain, the transformation and escalation classifier, the platform safety "
        "floors: an answer that leaks a secret or the system prompt is a handover with the reason "
        "`floor:<name>`) and returns the simulated answer; a real, paid provider call; never creates a chat. "
        "Disabled assistants are testable. One bound operator resolves by itself; several need `operator_id` "
        "(409 `ambiguous_operator`); a webhook or external transport is 409 `unsupported_transport` before "
        "any network call. Admission fails closed before paid work: 1 in flight and 10 started per 60 s per "
        "widget (429 `test_rate_limited` with `Retry-After`; 503 `admission_unavailable`); at most 10 "
        "provider HTTP operations under one 45 s deadline (504 `test_budget_exhausted`); provider failure 502"
        " `provider_failure`. The idempotency key is claimed before paid work and kept 86400 s even after a "
        "provider failure: a repeated key is 409 `idempotency_reused` and no saved answer is returned; never "
        "retry an uncertain test with a new key automatically. " + RULES,
        parameters=[ASSISTANT_ID_PARAM],
        request=TestInputDoc,
        responses={200: TestResultEnvelope},
    )
    def post(self, request, pk=None):
        raw_key = request.META.get(idempotency.META_KEY)
        try:
            key = idempotency.validate_key(raw_key)
        except Exception:  # noqa: BLE001 - missing or malformed: one code for the detached test
            raise errors.TestInvalidIdempotencyKey(
                f"Send {idempotency.HEADER}: 1 to 64 bytes, no ASCII whitespace or control characters."
            ) from None
        data = detached.parse_body(request.body, request.META.get("CONTENT_TYPE"))
        plan = detached.prepare(request.widget, assistant_id=pk, data=data, key=key, path=request.path)
        response = Response(status=202)
        response.plan = plan
        return response


_phase_one = AssistantTestView.as_view()


def _finish(plan: detached.Plan, status: int) -> None:
    detached.record_result(plan.row, status)
    detached.release_slot(plan.widget, plan.slot)


async def assistant_test(request, pk=None):
    """The route of GET and POST /v1/ai/assistants/{id}/test (see the module docstring)."""
    try:
        response = await sync_gate.hop(_phase_one, request, pk=pk)
    except errors.TestUnavailable as exc:
        return problem_response(exc, request)
    plan = getattr(response, "plan", None)
    if plan is None:
        return response
    from ..providers import ProviderError

    try:
        completion = await detached.run_provider(plan)
        final = JsonResponse({"data": detached.result(plan, completion)}, json_dumps_params={"ensure_ascii": False})
    except ProviderError as exc:
        final = problem_response(detached.provider_error(exc), request)
    except BaseException:
        await _finish_shielded(plan, 500)
        raise
    await _finish_shielded(plan, final.status_code)
    for name in RATE_HEADERS:
        if name in response:
            final[name] = response[name]
    return final


async def _finish_shielded(plan: detached.Plan, status: int) -> None:
    """Record the result and free the widget's slot. A busy gate or database does not change the answer:
    the recorded status is informative; the slot (the cache, no database) is freed all the same."""
    try:
        await sync_gate.hop(_finish, plan, status)
    except errors.TestUnavailable:
        logger.warning("detached test: the result of widget %s was not recorded (database busy)", plan.widget.pk)
        await sync_to_async(detached.release_slot)(plan.widget, plan.slot)


assistant_test.csrf_exempt = True
# drf-spectacular documents the route from the DRF view it wraps.
assistant_test.cls = AssistantTestView
assistant_test.initkwargs = {}
