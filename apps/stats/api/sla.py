"""GET /v1/stats/sla: the SLA clocks met and breached in a window (apps.stats.selectors.sla_stats)."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from apps.core.api.serializers import validate_input
from apps.core.api.views import ScopedAPIView

from .. import selectors
from . import serializers as s

KINDS = ("first_response", "next_response", "resolution")
KIND_HELP = {
    "first_response": "The first answer to the visitor's first message.",
    "next_response": "The answer to a visitor's message that waited after an answer.",
    "resolution": "The chat's closing.",
}


class SlaStatsQuery(s.WindowQuery):
    pass


class SlaOutcomeDoc(serializers.Serializer):
    met = serializers.IntegerField(help_text="Clocks of this kind stopped in the window by their due time.")
    breached = serializers.IntegerField(help_text="Clocks of this kind that ran out in the window.")


class SlaKindsDoc(serializers.Serializer):
    def get_fields(self):
        return {kind: SlaOutcomeDoc(help_text=KIND_HELP[kind]) for kind in KINDS}


class SlaAgentDoc(SlaKindsDoc):
    def get_fields(self):
        return {
            "agent_id": serializers.IntegerField(
                help_text="The chat's routing owner when the clock was met or breached."
            ),
            **super().get_fields(),
        }


class SlaStatsDataDoc(s.WindowDoc):
    def get_fields(self):
        return {
            **super().get_fields(),
            "total": SlaKindsDoc(help_text="Every clock decided in the window, assigned or not."),
            "agents": SlaAgentDoc(
                many=True, help_text="One row per agent with a clock decided in the window, by agent id."
            ),
        }


class SlaStatsDoc(serializers.Serializer):
    data = SlaStatsDataDoc(help_text="The window and its SLA figures.")


class SlaStatsView(ScopedAPIView):
    route_scopes = {"get": ["stats:read"]}
    problem_statuses = {"get": [422]}

    @extend_schema(
        summary="SLA statistics",
        description="SLA clocks decided in the window, by kind: `met` counts clocks stopped by their due time "
        "(by when they stopped), `breached` clocks that ran out (by when they did), in total and per agent (the "
        "chat's routing owner then; a clock decided with nobody assigned counts in the total only). A clock "
        "stopped with its chat before it was due (closed unanswered) counts in neither. Window: `from`/`to` or "
        "`period` as for /v1/stats (the same defaults and limits; 422 for a bad one).",
        parameters=[SlaStatsQuery],
        responses={200: SlaStatsDoc},
    )
    def get(self, request):
        query = validate_input(SlaStatsQuery, s.query_data(request, s.WINDOW_PARAMS), context={"now": timezone.now()})
        window = query["window"]
        figures = selectors.sla_stats(widget=request.widget, window=window)
        return Response({"data": {**s.window_payload(window), **figures}})
