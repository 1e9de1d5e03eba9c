"""Self-learning (`/v1/ai/learning/...`) and improvement wishes (`/v1/wishes`). Thin: parse, resolve
the assistant, call one service or selector, serialize.

The assistant: `assistant_id` (query on reads and `tune`, body on writes with a body) selects one of
the widget's assistants, default the effective one. An unknown or foreign `assistant_id` is 404
where the route's codes list 404 (history, one version, revert, submitting a wish), else 422.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.core.api.query import query_data
from apps.core.api.serializers import refuse_body
from apps.core.api.views import ScopedAPIView, WidgetScopedViewSet
from apps.core.errors import NotFound, ValidationFailed

from .. import selectors, services
from ..models import HistoryEntry, PersonaVersion, TuningCycle, Wish
from . import serializers as s

LIST_NOTE = "A cursor list `{data, next_cursor}`; `limit` 1 to 100 (422 outside)."
ASSISTANT_NOTE = (
    "`assistant_id` selects one of the widget's assistants (default: the effective assistant, the one "
    "`learning_target` of GET /v1/ai/settings names)."
)


def _token_id(request) -> int | None:
    return getattr(request.auth, "pk", None)  # the API token (apps.core.auth.authentication)


_NO_ROW = object()  # an id given but past any row's range (IdQueryField answers None): a missing one


def _assistant(request, assistant_id, *, missing: str):
    """The selected assistant (or the effective one when `assistant_id` is None); an unknown id is
    `missing` ("404" or "422")."""
    if assistant_id is _NO_ROW:
        assistant = None
    else:
        assistant = selectors.learning_assistant(request.widget, assistant_id)
    if assistant is None and assistant_id is not None:
        if missing == "404":
            raise NotFound()
        raise ValidationFailed(errors={"assistant_id": ["Unknown id."]})
    return assistant


def _given_id(query: dict):
    if "assistant_id" not in query:
        return None
    return _NO_ROW if query["assistant_id"] is None else query["assistant_id"]


def _query_assistant(view, *, missing: str):
    query = view.validated(s.AssistantQuery, data=query_data(view.request))
    return _assistant(view.request, _given_id(query), missing=missing)


# --- the control panel and the gates ----------------------------------------------------------------------


class LearningSettingsView(ScopedAPIView):
    """GET /v1/ai/learning/settings."""

    route_scopes = {"get": ["ai:read"]}

    @extend_schema(
        summary="Self-learning control panel",
        description="Everything about the assistant's learning in one read: the master switch "
        "`autonomous_tuning_enabled` (changed with PATCH /v1/ai/settings), `learning_target`, the `policy` "
        "(evidence needed, window, what a low rating is, the default probation, the daily schedule), the "
        "`kill_switch` gates, the newest persona version and whether it is live, the running `probation` (with the "
        "evidence since it started against the same length of time before), the last cycle, a cycle in progress "
        "and the wishes awaiting a decision. " + ASSISTANT_NOTE + " An unknown `assistant_id` is 422.",
        parameters=[s.AssistantQuery],
        responses={200: s.ControlPanelDoc},
    )
    def get(self, request):
        assistant = _query_assistant(self, missing="422")
        return Response(selectors.control_panel(request.widget, assistant))


class KillSwitchView(ScopedAPIView):
    """GET /v1/ai/learning/kill-switch."""

    route_scopes = {"get": ["ai:read"]}

    @extend_schema(
        summary="Tuning gates",
        description="The three gates that decide whether a tuning cycle may run, in order: `master_switch` (the "
        "widget's `autonomous_tuning_enabled`), `evidence` (at least `required` new evidence items since the last "
        "persona change or finished cycle: escalations, ratings of 1 or 2 and unanswered questions, support "
        "replies excluded) and `probation` (no applied change still in its probation window). `may_run` is true "
        "when all three are open. " + ASSISTANT_NOTE + " An unknown `assistant_id` is 422.",
        parameters=[s.AssistantQuery],
        responses={200: s.KillSwitchDoc},
    )
    def get(self, request):
        assistant = _query_assistant(self, missing="422")
        return Response(selectors.gates(request.widget, assistant))


class TuneView(ScopedAPIView):
    """POST /v1/ai/learning/tune."""

    route_scopes = {"post": ["ai:apply"]}
    idempotency_required = {"post"}
    problem_statuses = {"post": [409]}

    @extend_schema(
        summary="Queue a tuning cycle",
        description="No body (422 with one); `assistant_id` in the query (unknown: 422). Queues one cycle and "
        "answers 202 with it (`status` `queued`): a worker sends the new evidence (escalated and low-rated chats' "
        "last public messages, support replies left out, and unanswered topics) with the live persona and "
        "system prompt to the assistant's provider, which proposes a patch; a patch is applied as a `tune` persona "
        "version with a probation window of 72 hours (poll GET /v1/ai/learning/settings or /history). 409 "
        "`tuning_gate_closed` (the problem's `gates` names the closed ones), `cycle_in_progress`, `no_assistant` "
        "or `credential_unavailable`; a refusal changes nothing and releases the idempotency key.",
        parameters=[s.AssistantQuery],
        request=None,
        responses={202: s.CycleDoc},
    )
    def post(self, request):
        refuse_body(request)
        assistant = _query_assistant(self, missing="422")
        cycle = services.queue_cycle(widget=request.widget, assistant=assistant, token_id=_token_id(request))
        return Response(selectors.cycle_payload(cycle), status=status.HTTP_202_ACCEPTED)


# --- cycles, history, versions ----------------------------------------------------------------------------


class _AssistantScoped(WidgetScopedViewSet):
    """Rows of one assistant: `scope_queryset` narrows to `self.assistant` (set by the action)."""

    abstract = True
    assistant = None

    def scope_queryset(self, queryset):
        if self.assistant is None:
            return queryset.none()
        return queryset.filter(assistant=self.assistant)


class CycleViewSet(_AssistantScoped, mixins.ListModelMixin):
    queryset = TuningCycle.objects.filter(status=TuningCycle.Status.APPLIED).select_related("version")
    cursor_ordering = ("-created_at", "-id")
    route_scopes = {"list": ["ai:read"]}

    @extend_schema(
        summary="Tuning cycles",
        description="The cycles that produced a persona version, newest first, each with its evidence window and "
        "counts, the provider's proposal and rationale, and the version it made (cycles that failed or changed "
        "nothing are in the history). " + ASSISTANT_NOTE + " An unknown `assistant_id` is 422. " + LIST_NOTE,
        parameters=[s.AssistantQuery],
        responses={200: s.CycleDoc(many=True)},
    )
    def list(self, request):
        self.assistant = _query_assistant(self, missing="422")
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([selectors.cycle_payload(c) for c in page])


class HistoryViewSet(_AssistantScoped, mixins.ListModelMixin):
    queryset = HistoryEntry.objects.all()
    cursor_ordering = ("-created_at", "-id")
    route_scopes = {"list": ["ai:read"]}
    problem_statuses = {"list": [404]}

    @extend_schema(
        summary="Learning history",
        description="The append-only audit trail of the assistant's persona patches, newest first: "
        "`cycle_queued`, `cycle_applied`, `cycle_no_change`, `cycle_failed`, `wish_approved`, `wish_reverted`, "
        "`version_reverted`, each with the version, cycle or wish it concerns and who acted (`actor`: the token, "
        "or `system` for the worker and the schedule). Entries are never changed or removed. " + ASSISTANT_NOTE + " "
        "An unknown or foreign `assistant_id` is 404. " + LIST_NOTE,
        parameters=[s.AssistantQuery],
        responses={200: s.HistoryDoc(many=True)},
    )
    def list(self, request):
        self.assistant = _query_assistant(self, missing="404")
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([selectors.history_payload(e) for e in page])


VERSION_PARAM = OpenApiParameter(
    "version", int, OpenApiParameter.PATH, description="The version's number (counted up per assistant)."
)


class PersonaVersionViewSet(_AssistantScoped, mixins.ListModelMixin, mixins.RetrieveModelMixin):
    queryset = PersonaVersion.objects.all()
    cursor_ordering = ("-version", "-id")
    lookup_field = "version"
    lookup_value_regex = "[^/]+"
    route_scopes = {"list": ["ai:read"], "retrieve": ["ai:read"], "revert": ["ai:apply"]}
    idempotency_required = {"revert"}
    problem_statuses = {"revert": [409]}

    @extend_schema(
        summary="Persona versions",
        description="The assistant's persona and system-prompt versions, newest first. Versions count up per "
        "assistant; `source` is `tune` (a tuning cycle), `wish` (an approved wish) or `revert`. Each carries both "
        "snapshots (`persona`, `system_prompt` as that version made them), the pair it replaced (`previous`) and "
        "its probation. " + ASSISTANT_NOTE + " An unknown `assistant_id` is 422. " + LIST_NOTE,
        parameters=[s.AssistantQuery],
        responses={200: s.VersionDoc(many=True)},
    )
    def list(self, request):
        self.assistant = _query_assistant(self, missing="422")
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([selectors.version_payload(v) for v in page])

    @extend_schema(
        summary="Read a persona version",
        description="One version of the assistant with both snapshots. " + ASSISTANT_NOTE + " A version the "
        "assistant does not have, and an unknown or foreign `assistant_id`, are 404.",
        parameters=[VERSION_PARAM, s.AssistantQuery],
        responses={200: s.VersionDoc},
    )
    def retrieve(self, request, version=None):
        self.assistant = _query_assistant(self, missing="404")
        return Response(selectors.version_payload(self.get_object()))

    @extend_schema(
        summary="Revert to a persona version",
        description="Makes the version's snapshot live again (`restore: previous`: the pair it replaced), recorded "
        "as a new `revert` version; a running probation ends (`reverted`). Body (optional JSON object): "
        "`assistant_id`, `restore` (`snapshot` or `previous`). 409 `version_live` when that pair is already the "
        "live one. A version the assistant does not have, and an unknown or foreign `assistant_id`, are 404.",
        parameters=[VERSION_PARAM],
        request=s.RevertInput,
        responses={200: s.VersionDoc},
    )
    @action(detail=True, methods=["post"])
    def revert(self, request, version=None):
        data = self.validated(s.RevertInput)
        self.assistant = _assistant(request, data.get("assistant_id"), missing="404")
        target = self.get_object()
        new = services.revert_to_version(
            widget=request.widget,
            assistant=self.assistant,
            version=target,
            restore=data["restore"],
            token_id=_token_id(request),
        )
        return Response(selectors.version_payload(new))


# --- wishes -----------------------------------------------------------------------------------------------


class WishViewSet(WidgetScopedViewSet, mixins.ListModelMixin, mixins.CreateModelMixin, mixins.RetrieveModelMixin):
    """Improvement wishes of the token's widget."""

    queryset = Wish.objects.select_related("applied_version", "revert_version")
    cursor_ordering = ("-created_at", "-id")
    route_scopes = {
        "list": ["ai:read"],
        "create": ["ai:write"],
        "retrieve": ["ai:read"],
        "preview": ["ai:read"],
        "approve": ["ai:apply"],
        "reject": ["ai:write"],
        "revert": ["ai:apply"],
    }
    idempotency_required = {"create", "approve", "reject", "revert"}
    # Detail reads refuse any query parameter (422).
    problem_statuses = {
        "retrieve": [422],
        "preview": [422],
        "create": [404, 409],
        "approve": [409],
        "reject": [409],
        "revert": [409],
    }

    STATES = (
        "Statuses: `proposing` (the provider's rewrite is being made) -> `proposed` or `proposal_failed`; "
        "`proposed` -> `approved` (approve) or `rejected`; `proposing` and `proposal_failed` -> `rejected`; "
        "`approved` -> `reverted`. Any other action is 409 `wish_transition_not_allowed` (the problem names "
        "`wish_status` and the `allowed` actions); approving before the proposal exists is 409 `proposal_pending`."
    )

    @extend_schema(
        summary="List wishes",
        description="Newest first; filters `status` and `assistant_id` (unknown: 422). " + LIST_NOTE,
        parameters=[s.WishListQuery],
        responses={200: s.WishDoc(many=True)},
    )
    def list(self, request):
        query = self.validated(s.WishListQuery, data=query_data(request))
        assistant = None
        if "assistant_id" in query:
            assistant = _assistant(request, _given_id(query), missing="422")
        qs = selectors.filter_wishes(self.get_queryset(), status=query.get("status"), assistant=assistant)
        page = self.paginate_queryset(qs)
        return self.get_paginated_response([selectors.wish_payload(w) for w in page])

    @extend_schema(
        summary="Submit a wish",
        description="`{text (1 to 2000 characters), assistant_id?}`. The wish is stored as `proposing` and the "
        "assistant's provider proposes the rewritten persona and system prompt asynchronously; poll the wish "
        "(`proposal_pending`) or its preview. An unknown or foreign `assistant_id` is 404; 409 `no_assistant` "
        "(none named and none effective) or `credential_unavailable` (no provider credential resolves). Each "
        "wish is a provider call: at most 20 per hour per widget (429 with `Retry-After`). " + STATES,
        request=s.WishInput,
        responses={201: s.WishDetailDoc},
    )
    def create(self, request):
        data = self.validated(s.WishInput)
        assistant = _assistant(request, data.get("assistant_id"), missing="404")
        wish = services.submit_wish(
            widget=request.widget, assistant=assistant, text=data["text"], token_id=_token_id(request)
        )
        return Response(selectors.wish_payload(wish, trail=selectors.wish_trail(wish)), status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Read a wish",
        description="The wish with its decision trail (submitted, proposed or proposal_failed, approved, rejected, "
        "reverted: when, by whom, with the note and details). " + STATES,
        responses={200: s.WishDetailDoc},
    )
    def retrieve(self, request, pk=None):
        self.validated(s.EmptyQuery, data=query_data(request))
        wish = self.get_object()
        return Response(selectors.wish_payload(wish, trail=selectors.wish_trail(wish)))

    @extend_schema(
        summary="Preview a wish",
        description="Side-effect free: the live persona and system prompt, the stored proposal (null while "
        "`proposal_pending` or after `proposal_failed`), which of the two it changes, `stale` (the live pair changed "
        "since the proposal was made: approval would be 409 `persona_changed`) and `approvable`.",
        responses={200: s.PreviewDoc},
    )
    @action(detail=True, methods=["get"])
    def preview(self, request, pk=None):
        self.validated(s.EmptyQuery, data=query_data(request))
        return Response(selectors.wish_preview(self.get_object()))

    @extend_schema(
        summary="Approve a wish",
        description="Applies the stored proposal (no provider call): the assistant's persona and system prompt "
        "become the proposal, recorded as a `wish` persona version, and a probation window starts (`probation_hours`"
        ", default 72, 1 to 168): while it runs no tuning cycle may run, and the control panel compares the "
        "evidence since the change with the same length of time before it. Another change ends it (`superseded`), "
        "a revert ends it (`reverted`). Body (optional JSON object): `probation_hours`, `note`. 409 "
        "`proposal_pending`, `persona_changed` or `wish_transition_not_allowed`. " + STATES,
        request=s.ApproveInput,
        responses={200: s.WishDetailDoc},
    )
    @action(detail=True, methods=["post"])
    def approve(self, request, pk=None):
        data = self.validated(s.ApproveInput)
        wish = services.approve_wish(
            widget=request.widget,
            wish=self.get_object(),
            probation_hours=data["probation_hours"],
            note=data.get("note", ""),
            token_id=_token_id(request),
        )
        return Response(selectors.wish_payload(wish, trail=selectors.wish_trail(wish)))

    @extend_schema(
        summary="Reject a wish",
        description="Declines the wish without applying anything. No body. " + STATES,
        request=None,
        responses={200: s.WishDetailDoc},
    )
    @action(detail=True, methods=["post"])
    def reject(self, request, pk=None):
        refuse_body(request)
        wish = services.reject_wish(widget=request.widget, wish=self.get_object(), token_id=_token_id(request))
        return Response(selectors.wish_payload(wish, trail=selectors.wish_trail(wish)))

    @extend_schema(
        summary="Revert a wish",
        description="Undoes the approved change: the persona and system prompt it replaced become live again, "
        "recorded as a `revert` version; its probation ends (`reverted`). No body. 409 `persona_changed` when the "
        "live pair is no longer the one the approval made (revert a persona version instead). " + STATES,
        request=None,
        responses={200: s.WishDetailDoc},
    )
    @action(detail=True, methods=["post"])
    def revert(self, request, pk=None):
        refuse_body(request)
        wish = services.revert_wish(widget=request.widget, wish=self.get_object(), token_id=_token_id(request))
        return Response(selectors.wish_payload(wish, trail=selectors.wish_trail(wish)))
