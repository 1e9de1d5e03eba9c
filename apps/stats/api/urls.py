"""Statistics routes and the chats export. `agents/stats` and `agents/{id}/stats` live here, not under
the agents router, and `chats/export` not under the chats router: config.urls includes this module
before apps.agents.api.urls and apps.chats.api.urls, so neither reaches a router's `{id}` route."""

from django.urls import re_path

from .sla import SlaStatsView
from .views import (
    AgentStatsViewSet,
    ChannelStatsView,
    ChatExportView,
    RoutingStatsView,
    StatsView,
    TimeseriesView,
)

urlpatterns = [
    re_path(r"^chats/export/?$", ChatExportView.as_view(), name="chat-export"),
    re_path(r"^stats/?$", StatsView.as_view(), name="stats"),
    re_path(r"^stats/channels/?$", ChannelStatsView.as_view(), name="stats-channels"),
    re_path(r"^stats/sla/?$", SlaStatsView.as_view(), name="stats-sla"),
    re_path(r"^stats/timeseries/?$", TimeseriesView.as_view(), name="stats-timeseries"),
    re_path(r"^stats/routing/?$", RoutingStatsView.as_view(), name="stats-routing"),
    re_path(r"^agents/stats/?$", AgentStatsViewSet.as_view({"get": "list"}), name="agent-stats-list"),
    re_path(r"^agents/(?P<pk>[0-9]+)/stats/?$", AgentStatsViewSet.as_view({"get": "retrieve"}), name="agent-stats"),
]
