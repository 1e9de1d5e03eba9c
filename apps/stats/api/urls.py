"""Statistics routes. `agents/stats` and `agents/{id}/stats` live here, not under the agents router:
config.urls includes this module before apps.agents.api.urls so `agents/stats` never reaches the
agents router's `agents/{id}` route."""

from django.urls import re_path

from .views import AgentStatsViewSet, ChannelStatsView, StatsView, TimeseriesView

urlpatterns = [
    re_path(r"^stats/?$", StatsView.as_view(), name="stats"),
    re_path(r"^stats/channels/?$", ChannelStatsView.as_view(), name="stats-channels"),
    re_path(r"^stats/timeseries/?$", TimeseriesView.as_view(), name="stats-timeseries"),
    re_path(r"^agents/stats/?$", AgentStatsViewSet.as_view({"get": "list"}), name="agent-stats-list"),
    re_path(r"^agents/(?P<pk>[0-9]+)/stats/?$", AgentStatsViewSet.as_view({"get": "retrieve"}), name="agent-stats"),
]
