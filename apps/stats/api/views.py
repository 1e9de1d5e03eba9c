"""Statistics of the token's widget: aggregate, per channel, time series and per agent.

Figures come from the facts the chat services maintain (apps.stats.selectors); windows and buckets
are calendar-anchored in Europe/Moscow (apps.stats.windows).
"""

from __future__ import annotations

from django.http import StreamingHttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins
from rest_framework.response import Response

from apps.agents.models import Agent
from apps.core.api.serializers import validate_input
from apps.core.api.streaming import IgnoreAccept
from apps.core.api.views import ScopedAPIView, WidgetScopedViewSet
from apps.core.timeparse import format_moment

from .. import export, selectors
from ..windows import MAX_BUCKETS
from . import serializers as s

WINDOW_RULES = (
    "Window: `period` (`today`, `yesterday`, `week` from Monday, `month` from the 1st; calendar-anchored in "
    "Europe/Moscow, a running period ends at the next midnight) or `from`/`to`, never both (422). Without "
    "either, the trailing 30 Moscow days including today; only `to`: the 30 days before it; only `from`: up to "
    "the end of today. `to` must be later than `from`. Chat figures count chats created in the window (with "
    "their attribution as it is now); messages, ratings and transfers count when they happened in it. "
    "Response `from`, `to` and bucket boundaries are in Europe/Moscow."
)


def _validated(serializer_class, request, allowed: tuple[str, ...]) -> dict:
    """Validate the query; `cursor` and `limit`, when allowed, are left to the paginator."""
    data = {k: v for k, v in s.query_data(request, allowed).items() if k not in ("cursor", "limit")}
    return validate_input(serializer_class, data, context={"now": timezone.now()})


class StatsView(ScopedAPIView):
    route_scopes = {"get": ["stats:read"]}
    problem_statuses = {"get": [422]}

    @extend_schema(
        summary="Aggregate statistics",
        description=WINDOW_RULES
        + " `chats_missed` counts chats opened in the window that nobody answered; `chats_accepted` equals "
        "`chats_total - chats_missed`; `avg_response_time_seconds` is measured from room creation (inflated by "
        "returning visitors); `avg_first_response_seconds` is opt-in.",
        parameters=[s.StatsQuery],
        responses={200: s.StatsDoc},
    )
    def get(self, request):
        query = _validated(s.StatsQuery, request, (*s.WINDOW_PARAMS, "metric"))
        window = query["window"]
        metrics = selectors.get_widget_stats(widget=request.widget, window=window, metrics=query["metric"])
        return Response({"data": {**s.window_payload(window), "metrics": metrics}})


class ChannelStatsView(ScopedAPIView):
    route_scopes = {"get": ["stats:read"]}
    problem_statuses = {"get": [422]}

    @extend_schema(
        summary="Statistics per channel",
        description=WINDOW_RULES
        + " One row per channel code with chats in the window, by code; channels without chats are omitted. "
        "Internal department chats are excluded, so the channel totals can be below `chats_total` of /v1/stats.",
        parameters=[s.ChannelStatsQuery],
        responses={200: s.ChannelStatsDoc},
    )
    def get(self, request):
        query = _validated(s.ChannelStatsQuery, request, s.WINDOW_PARAMS)
        window = query["window"]
        rows = selectors.list_channel_stats(widget=request.widget, window=window)
        return Response({"data": rows, **s.window_payload(window)})


class TimeseriesView(ScopedAPIView):
    route_scopes = {"get": ["stats:read"]}
    problem_statuses = {"get": [422]}

    @extend_schema(
        summary="Statistics as a time series",
        description=WINDOW_RULES
        + f" Buckets are Moscow calendar days, weeks (Monday) or months (the 1st) meeting the window, the first "
        f"and last clipped to it; dense and zero-filled. A window giving over {MAX_BUCKETS} buckets is 422.",
        parameters=[s.TimeseriesQuery],
        responses={200: s.TimeseriesDoc},
    )
    def get(self, request):
        query = _validated(s.TimeseriesQuery, request, (*s.WINDOW_PARAMS, "interval", "metric"))
        window, interval = query["window"], query["interval"]
        rows = selectors.list_buckets(widget=request.widget, window=window, interval=interval, metrics=query["metric"])
        buckets = [
            {"from": format_moment(row["from"]), "to": format_moment(row["to"]), "metrics": row["metrics"]}
            for row in rows
        ]
        return Response({"data": {"interval": interval, **s.window_payload(window), "buckets": buckets}})


class RoutingStatsView(ScopedAPIView):
    route_scopes = {"get": ["stats:read"]}
    problem_statuses = {"get": [422]}

    @extend_schema(
        summary="Routing statistics",
        description=WINDOW_RULES
        + " Figures count when they happened in the window: `chats_routed` the assignments routing made "
        "(serving the queue or re-routing), `chats_rerouted` the re-routes (an assigned chat left unanswered for "
        "`reroute_after_seconds` moved to the next eligible operator), `time_to_assignment` the time from when a "
        "chat began to wait for a person to its first assignment by anyone (routing, an operator, the API or "
        "automation), counted on the day of that assignment, and `agents` the assignments routing gave each "
        "operator. SLA figures are in `/v1/stats/sla`.",
        parameters=[s.RoutingStatsQuery],
        responses={200: s.RoutingStatsDoc},
    )
    def get(self, request):
        query = _validated(s.RoutingStatsQuery, request, s.WINDOW_PARAMS)
        window = query["window"]
        figures = selectors.routing_stats(widget=request.widget, window=window)
        return Response({"data": {**s.window_payload(window), **figures}})


class ChatExportView(ScopedAPIView):
    route_scopes = {"get": ["chats:read"]}
    problem_statuses = {"get": [422, 503]}
    content_negotiation_class = IgnoreAccept

    @extend_schema(
        summary="Export chats",
        description=(
            "One row per chat created in the window [`from`, `to`) (both required, read like the statistics "
            f"filters: Europe/Moscow unless an offset is given; at most {export.MAX_WINDOW_DAYS} days), oldest "
            "first, streamed as an attachment without Content-Length. Columns: "
            + ", ".join(f"`{column}`" for column in export.COLUMNS)
            + ". `contact_id` is the contact's 32-character guid (the `id` of `/contacts/{guid}`, never the "
            "numeric id). `created_at` and `closed_at` are RFC 3339 in UTC; `first_response_seconds` is the first "
            "visible operator reply after the visitor message that opened the conversation, to the millisecond; "
            "`duration_seconds` runs from creation to `closed_at` (empty while open); `messages` counts the "
            "public messages of the visitor, people and the AI operator; `accepted_by_type` and `handled_by_type` "
            "are `human`, `ai` or empty; `ai_to_human` and `human_to_ai` say whether the chat went that way; "
            "`rating` is the latest rating (1-5) or empty; `tags` are the contact's tags; `assigned_by` says who made "
            "the chat's latest assignment (`routing`, `agent` for a person in the console, `api`, `automation`; empty "
            "when it was never assigned); `sla_breached` is true when any SLA clock of the chat ran out. CSV has a "
            "header row, "
            "`true`/`false` for booleans, an empty cell for null and tags joined by `,` (a cell starting with "
            "`=`, `+`, `-`, `@`, a tab or a carriage return is prefixed with `'`, so a spreadsheet reads it as "
            "text); JSON Lines gives one object per line, null for null and tags as a list. A chat whose contact "
            "is being erased is left out. At most two exports of a widget are in flight at once (each until its "
            "client has read it all or has gone): another is 429 `rate_limited` with `Retry-After`."
        ),
        parameters=[s.ExportQuery],
        responses={
            (200, "text/csv"): OpenApiResponse(
                response=OpenApiTypes.STR,
                description='`format=csv`; `Content-Disposition: attachment; filename="chats-{from}-{to}.csv"`.',
            ),
            (200, "application/x-ndjson"): OpenApiResponse(
                response=OpenApiTypes.STR,
                description='`format=jsonl`; `Content-Disposition: attachment; filename="chats-{from}-{to}.jsonl"`.',
            ),
        },
    )
    def get(self, request):
        query = _validated(s.ExportQuery, request, ("from", "to", "format"))
        window, fmt = query["window"], query["format"]
        slot = export.admit(request.widget.pk)
        pages = export.read_ahead(export.export_pages(widget_id=request.widget.pk, window=window))
        body = export.holding(export.render(pages, fmt), slot, request)
        response = StreamingHttpResponse(body, content_type=export.CONTENT_TYPES[fmt])
        response["Content-Disposition"] = f'attachment; filename="{export.filename(window, fmt)}"'
        return response


AGENT_RULES = (
    " Every agent of the widget is present (any type and status), zero-filled; an undefined average is null. "
    "`chats_total` and `avg_response_time_seconds` count chats assigned to the agent (its routing owner now); "
    "`messages_total` counts messages the agent sent; ratings are attributed to the agent handling the chat at "
    "rating time; `chats_missed` is always 0 for the AI operator."
)


@extend_schema_view(
    list=extend_schema(
        summary="Statistics of every agent",
        description=(
            "Per-agent metrics (chats accepted, missed, messages, response times, rating) over a window, one row per "
            "agent of the widget, paged with `cursor` and `limit`. Window: `period` (`today`, `yesterday`, `week` "
            "from Monday, `month` from the 1st, Europe/Moscow) or `from`/`to`; the trailing 30 days when neither is "
            "given. `metric` picks metrics."
        ),
    ),
    retrieve=extend_schema(
        summary="Statistics of one agent",
        description=(
            "The same metrics for one agent of the widget over the same kind of window (`period` or `from`/`to`, "
            "trailing 30 days by default). A foreign or unknown agent is 404."
        ),
    ),
)
class AgentStatsViewSet(WidgetScopedViewSet, mixins.ListModelMixin, mixins.RetrieveModelMixin):
    """Per-agent statistics: GET /v1/agents/stats (every agent, by id, paginated) and
    GET /v1/agents/{id}/stats (one agent of this widget; a foreign id is 404)."""

    queryset = Agent.objects.all()
    cursor_ordering = ("id",)
    route_scopes = {"list": ["stats:read"], "retrieve": ["stats:read"]}
    problem_statuses = {"retrieve": [422]}

    @extend_schema(
        summary="Statistics of every agent",
        description=WINDOW_RULES + AGENT_RULES,
        parameters=[s.AgentStatsQuery],
        responses={200: s.AgentStatsListDoc},
    )
    def list(self, request):
        query = _validated(s.AgentStatsQuery, request, (*s.WINDOW_PARAMS, "metric", "cursor", "limit"))
        window = query["window"]
        agents = self.paginate_queryset(self.get_queryset())
        rows = selectors.agent_rows(widget=request.widget, window=window, agents=agents, metrics=query["metric"])
        return Response({"data": rows, "next_cursor": self.paginator.next_cursor(), **s.window_payload(window)})

    @extend_schema(
        summary="Statistics of one agent",
        description=WINDOW_RULES + AGENT_RULES,
        parameters=[s.AgentStatsQuery],
        responses={200: s.AgentStatsDoc},
    )
    def retrieve(self, request, pk=None):
        agent = self.get_object()
        query = _validated(s.AgentStatsQuery, request, (*s.WINDOW_PARAMS, "metric"))
        window = query["window"]
        [row] = selectors.agent_rows(widget=request.widget, window=window, agents=[agent], metrics=query["metric"])
        return Response({"data": {**row, **s.window_payload(window)}})
