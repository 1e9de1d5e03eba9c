"""Query parameters of the statistics endpoints (strict: unknown, repeated or invalid -> 422, never a
clamp) and documentation serializers of their output shapes."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from apps.agents.models import Agent
from apps.core.api.query import MomentField
from apps.core.api.serializers import InputSerializer
from apps.core.timeparse import format_moment

from .. import export, selectors
from ..windows import INTERVALS, MAX_BUCKETS, PERIODS, Window, WindowError, bucket_count

WINDOW_PARAMS = ("from", "to", "period")


def query_data(request, allowed: tuple[str, ...]) -> dict:
    """The query parameters, one value each; a parameter outside `allowed` is refused by name."""
    data, errors = {}, {}
    for key in request.query_params:
        values = request.query_params.getlist(key)
        if key not in allowed:
            errors[key] = ["Unknown parameter."]
        elif len(values) > 1:
            errors[key] = ["Give this parameter once."]
        else:
            data[key] = values[0]
    if errors:
        raise serializers.ValidationError(errors)
    return data


class MetricListField(serializers.CharField):
    """Comma-separated subset of `choices`; the result keeps the documented order."""

    default_error_messages = {"unknown": "Unknown metric(s): {names}. Allowed: {allowed}.", "empty": "Empty metric."}

    def __init__(self, *, choices: tuple[str, ...], note: str = "", **kwargs):
        self.metric_choices = choices
        kwargs.setdefault(
            "help_text",
            f"Comma-separated subset of: {', '.join(f'`{c}`' for c in choices)}; omitted means all{note}. "
            "An unknown name is 422.",
        )
        super().__init__(**kwargs)
        names = "|".join(choices)
        extend_schema_field({"type": "string", "pattern": f"^(?:{names})(?:,(?:{names}))*$"})(self)

    def to_internal_value(self, data):
        names = [name.strip() for name in super().to_internal_value(data).split(",")]
        if any(not name for name in names):
            self.fail("empty")
        unknown = sorted(set(names) - set(self.metric_choices))
        if unknown:
            self.fail("unknown", names=", ".join(unknown), allowed=", ".join(self.metric_choices))
        return tuple(name for name in self.metric_choices if name in names)


class WindowQuery(InputSerializer):
    from_ = MomentField(
        required=False,
        help_text="Date-time or date, Europe/Moscow unless an offset is given; a bare date is midnight. Inclusive. "
        "From 1900-01-01 to 9999-01-01.",
    )
    to = MomentField(required=False, help_text="Like `from`; exclusive (send the next day to include a whole day).")
    period = serializers.ChoiceField(
        choices=PERIODS, required=False, help_text="Calendar period in Europe/Moscow; not with `from`/`to`."
    )

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = fields.pop("from_")
        return fields

    def validate(self, attrs):
        try:
            attrs["window"] = Window.resolve(
                period=attrs.get("period"), start=attrs.get("from"), end=attrs.get("to"), now=self.context["now"]
            )
        except WindowError as err:
            raise serializers.ValidationError({err.field: [str(err)]}) from None
        return attrs


class StatsQuery(WindowQuery):
    metric = MetricListField(
        choices=selectors.WIDGET_METRICS + selectors.OPT_IN_METRICS,
        note=" except the opt-in `avg_first_response_seconds`",
        required=False,
    )

    def validate(self, attrs):
        attrs = super().validate(attrs)
        attrs.setdefault("metric", selectors.WIDGET_METRICS)
        return attrs


class ChannelStatsQuery(WindowQuery):
    pass


class TimeseriesQuery(WindowQuery):
    interval = serializers.ChoiceField(choices=INTERVALS, required=False, help_text="Bucket size; `day` by default.")
    metric = MetricListField(choices=selectors.TIMESERIES_METRICS, required=False)

    def validate(self, attrs):
        attrs = super().validate(attrs)
        attrs.setdefault("interval", "day")
        attrs.setdefault("metric", selectors.TIMESERIES_METRICS)
        count = bucket_count(attrs["window"], attrs["interval"])
        if count > MAX_BUCKETS:
            raise serializers.ValidationError(
                {"interval": [f"The window gives {count} {attrs['interval']} buckets; at most {MAX_BUCKETS}."]}
            )
        return attrs


class AgentStatsQuery(WindowQuery):
    metric = MetricListField(choices=selectors.AGENT_METRICS, required=False)

    def validate(self, attrs):
        attrs = super().validate(attrs)
        attrs.setdefault("metric", selectors.AGENT_METRICS)
        return attrs


class ExportQuery(WindowQuery):
    """The statistics window with `from` and `to` required, no `period`, at most MAX_WINDOW_DAYS."""

    from_ = MomentField(
        help_text="Date-time or date, Europe/Moscow unless an offset is given; a bare date is midnight. Inclusive."
    )
    to = MomentField(help_text=f"Like `from`; exclusive. At most {export.MAX_WINDOW_DAYS} days after `from`.")
    period = None
    format = serializers.ChoiceField(
        choices=export.FORMATS, required=False, help_text="`csv` (the default) or `jsonl`."
    )

    def validate(self, attrs):
        attrs = super().validate(attrs)
        window = attrs["window"]
        if window.end - window.start > timedelta(days=export.MAX_WINDOW_DAYS):
            raise serializers.ValidationError({"to": [f"At most {export.MAX_WINDOW_DAYS} days after `from`."]})
        attrs.setdefault("format", "csv")
        return attrs


def window_payload(window: Window) -> dict:
    return {
        "from": format_moment(window.start),
        "to": format_moment(window.end),
        "timezone": settings.BUSINESS_TIME_ZONE,
    }


# --- documentation of output shapes ---------------------------------------------------------------------

_CHATS_WINDOW = " Chats created in the window."
_AVG_RESPONSE = (
    "Mean over the window's chats with a visible operator reply (person or AI operator) of the time from "
    "room creation to that first reply, in seconds to the millisecond; null when no chat was answered. A "
    "returning visitor writes into the same room, so a room created long before the reply inflates it."
)


class WindowDoc(serializers.Serializer):
    def get_fields(self):
        return {
            "from": serializers.DateTimeField(help_text="Window start (inclusive), Europe/Moscow offset."),
            "to": serializers.DateTimeField(help_text="Window end (exclusive), Europe/Moscow offset."),
            "timezone": serializers.CharField(help_text="Always `Europe/Moscow`."),
        }


class WidgetMetricsDoc(serializers.Serializer):
    """Exactly the metrics named by `metric` (all but the opt-in one when it is omitted)."""

    chats_total = serializers.IntegerField(required=False, help_text="Chats (rooms) created in the window.")
    chats_missed = serializers.IntegerField(required=False, help_text="Of those, chats nobody has answered.")
    chats_accepted = serializers.IntegerField(required=False, help_text="`chats_total - chats_missed`.")
    chats_accepted_ai = serializers.IntegerField(
        required=False, help_text="First answered by the AI operator." + _CHATS_WINDOW
    )
    chats_accepted_human = serializers.IntegerField(
        required=False, help_text="First answered by a person." + _CHATS_WINDOW
    )
    chats_handled_ai = serializers.IntegerField(required=False, help_text="Handled now by the AI operator.")
    chats_handled_human = serializers.IntegerField(required=False, help_text="Handled now by a person.")
    chats_ai_to_human = serializers.IntegerField(
        required=False, help_text="Answered by the AI operator, then taken over by a person (at any time)."
    )
    chats_human_to_ai = serializers.IntegerField(
        required=False, help_text="Answered by a person, then taken over by the AI operator (at any time)."
    )
    messages_total = serializers.IntegerField(
        required=False,
        help_text="Public messages of the visitor, people and the AI operator sent in the window (rating "
        "requests, notes, e-mails and internal messages are not counted).",
    )
    avg_response_time_seconds = serializers.FloatField(required=False, allow_null=True, help_text=_AVG_RESPONSE)
    rating_average = serializers.FloatField(
        required=False, allow_null=True, help_text="Mean of the ratings given in the window (2 decimals); null if none."
    )
    avg_first_response_seconds = serializers.FloatField(
        required=False,
        allow_null=True,
        help_text="Opt-in (name it in `metric`). Mean time from the visitor message that opened the conversation "
        "answered by the chat's first operator reply to that reply, over the window's answered chats. A visitor "
        "message opens a conversation when it is the room's first or comes 7 minutes or more (the idle expiry) "
        "after the room's previous message, so returning visitors do not inflate it; chats whose first reply "
        "came before any visitor message are left out. Seconds to the millisecond; null if none.",
    )


class StatsDataDoc(WindowDoc):
    def get_fields(self):
        return {**super().get_fields(), "metrics": WidgetMetricsDoc(help_text="The window's metrics.")}


class StatsDoc(serializers.Serializer):
    data = StatsDataDoc(help_text="The window and its metrics.")


class ChannelRowDoc(serializers.Serializer):
    channel = serializers.CharField(help_text="Channel code: `widget`, `ch{id}` or a messenger code.")
    chats_accepted = serializers.IntegerField(
        help_text="Chats of the channel created in the window that an operator answered."
    )
    chats_accepted_ai = serializers.IntegerField(help_text="Of those, first answered by the AI operator.")
    chats_accepted_human = serializers.IntegerField(help_text="Of those, first answered by a person.")
    chats_missed = serializers.IntegerField(
        help_text="Chats of the channel created in the window that nobody answered."
    )


class ChannelStatsDoc(WindowDoc):
    def get_fields(self):
        return {
            "data": ChannelRowDoc(
                many=True, help_text="One row per channel with chats in the window; internal department chats excluded."
            ),
            **super().get_fields(),
        }


class TimeseriesMetricsDoc(serializers.Serializer):
    """Exactly the metrics named by `metric` (all six when it is omitted)."""

    chats_total = serializers.IntegerField(required=False, help_text="Chats (rooms) created in the bucket.")
    chats_missed = serializers.IntegerField(required=False, help_text="Of those, chats nobody has answered.")
    chats_accepted = serializers.IntegerField(required=False, help_text="`chats_total - chats_missed`.")
    chats_accepted_ai = serializers.IntegerField(
        required=False, help_text="Of those, first answered by the AI operator."
    )
    chats_accepted_human = serializers.IntegerField(required=False, help_text="Of those, first answered by a person.")
    messages_total = serializers.IntegerField(required=False, help_text="Public messages sent in the bucket.")


class BucketDoc(serializers.Serializer):
    def get_fields(self):
        return {
            "from": serializers.DateTimeField(help_text="Bucket start, Europe/Moscow (the first: the window start)."),
            "to": serializers.DateTimeField(help_text="Bucket end, exclusive (the window end for the last)."),
            "metrics": TimeseriesMetricsDoc(help_text="The bucket's metrics."),
        }


class TimeseriesDataDoc(WindowDoc):
    def get_fields(self):
        return {
            "interval": serializers.ChoiceField(choices=INTERVALS, help_text="The bucket size."),
            **super().get_fields(),
            "buckets": BucketDoc(many=True, help_text="Dense, zero-filled buckets covering the window, oldest first."),
        }


class TimeseriesDoc(serializers.Serializer):
    data = TimeseriesDataDoc(help_text="The window and its buckets.")


class RatingDistributionDoc(serializers.Serializer):
    def get_fields(self):
        return {
            str(v): serializers.IntegerField(help_text=f"How many ratings of {v}.") for v in selectors.RATING_VALUES
        }


class AgentMetricsDoc(serializers.Serializer):
    """Exactly the metrics named by `metric` (all when it is omitted); zero-filled."""

    chats_total = serializers.IntegerField(
        required=False, help_text="Chats created in the window whose routing owner is the agent."
    )
    avg_response_time_seconds = serializers.FloatField(
        required=False, allow_null=True, help_text="Over the chats of `chats_total`. " + _AVG_RESPONSE
    )
    messages_total = serializers.IntegerField(required=False, help_text="Public messages the agent sent in the window.")
    rating_average = serializers.FloatField(
        required=False,
        allow_null=True,
        help_text="Ratings given in the window while the agent handled the chat (2 decimals); null if none.",
    )
    rating_distribution = RatingDistributionDoc(required=False, help_text="Those ratings counted per value 1 to 5.")
    chats_accepted = serializers.IntegerField(required=False, help_text="Chats created in the window it answered 1st.")
    chats_handled = serializers.IntegerField(required=False, help_text="Chats created in the window it handles now.")
    chats_transferred_out = serializers.IntegerField(required=False, help_text="Transfers away from it in the window.")
    chats_transferred_in = serializers.IntegerField(required=False, help_text="Transfers to it in the window.")
    chats_missed = serializers.IntegerField(
        required=False,
        help_text="Chats of `chats_total` nobody has answered; always 0 for the AI operator (never an owner).",
    )


class AgentRowDoc(serializers.Serializer):
    agent_id = serializers.IntegerField(help_text="The agent's id.")
    name = serializers.CharField(help_text="The agent's name.")
    type = serializers.ChoiceField(choices=Agent.Type.values, help_text="`human`, `ai` or `webhook`.")
    metrics = AgentMetricsDoc(help_text="The agent's metrics in the window, zero-filled; an undefined average is null.")


@extend_schema_serializer(many=False)
class AgentStatsListDoc(WindowDoc):
    def get_fields(self):
        return {
            "data": AgentRowDoc(many=True, help_text="Every agent of the widget (banned ones too), by id."),
            "next_cursor": serializers.CharField(allow_null=True, help_text="Opaque cursor of the next page."),
            **super().get_fields(),
        }


class AgentStatsDataDoc(AgentRowDoc):
    def get_fields(self):
        return {**super().get_fields(), **WindowDoc().get_fields()}


class AgentStatsDoc(serializers.Serializer):
    data = AgentStatsDataDoc(help_text="The agent's row and the window.")


class RoutingStatsQuery(WindowQuery):
    pass


class TimeToAssignmentDoc(serializers.Serializer):
    average_seconds = serializers.FloatField(
        allow_null=True,
        help_text="Mean time from when a chat began to wait for a person to its first assignment, in seconds to "
        "the millisecond; null without any.",
    )
    count = serializers.IntegerField(help_text="First assignments of waiting chats in the window.")


class RoutingAgentDoc(serializers.Serializer):
    agent_id = serializers.IntegerField(help_text="The operator's id.")
    chats_routed = serializers.IntegerField(help_text="Assignments routing gave this operator in the window.")


class RoutingStatsDataDoc(WindowDoc):
    def get_fields(self):
        return {
            **super().get_fields(),
            "chats_routed": serializers.IntegerField(
                help_text="Assignments routing made in the window (a re-routed chat counts again for its new operator)."
            ),
            "chats_rerouted": serializers.IntegerField(
                help_text="Re-routes in the window: an assigned chat left unanswered past `reroute_after_seconds` "
                "moved to the next eligible operator."
            ),
            "time_to_assignment": TimeToAssignmentDoc(help_text="Time from queueing to the first assignment."),
            "agents": RoutingAgentDoc(
                many=True, help_text="Operators routing assigned at least one chat in the window, by id."
            ),
        }


class RoutingStatsDoc(serializers.Serializer):
    data = RoutingStatsDataDoc(help_text="The routing figures and the window.")
