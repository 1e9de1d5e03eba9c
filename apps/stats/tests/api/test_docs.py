"""The documentation serializers describe exactly what the endpoints answer."""

import pytest

from apps.stats import selectors
from apps.stats.api import serializers as docs

from ..conftest import msk

pytestmark = pytest.mark.django_db

JAN15 = {"from": "2025-01-15", "to": "2025-01-16"}


def fields(serializer) -> set[str]:
    return set(serializer.fields)


@pytest.fixture
def answered(talk):
    chat = talk.at(msk(2025, 1, 15, 10)).visitor(channel="tg")
    talk.at(msk(2025, 1, 15, 10, 1)).reply(chat)
    return talk


def test_stats_documents_its_shape(api, answered):
    metric = ",".join(selectors.WIDGET_METRICS + selectors.OPT_IN_METRICS)
    body = api().get("/api/v1/stats", {**JAN15, "metric": metric}).json()
    assert set(body) == fields(docs.StatsDoc())
    assert set(body["data"]) == fields(docs.StatsDataDoc())
    assert set(body["data"]["metrics"]) == fields(docs.WidgetMetricsDoc())


def test_channels_document_their_shape(api, answered):
    body = api().get("/api/v1/stats/channels", JAN15).json()
    assert set(body) == fields(docs.ChannelStatsDoc())
    assert set(body["data"][0]) == fields(docs.ChannelRowDoc())


def test_timeseries_documents_its_shape(api, answered):
    data = api().get("/api/v1/stats/timeseries", JAN15).json()["data"]
    assert set(data) == fields(docs.TimeseriesDataDoc())
    assert set(data["buckets"][0]) == fields(docs.BucketDoc())
    assert set(data["buckets"][0]["metrics"]) == fields(docs.TimeseriesMetricsDoc())


def test_agent_stats_document_their_shape(api, answered):
    body = api().get("/api/v1/agents/stats", JAN15).json()
    assert set(body) == fields(docs.AgentStatsListDoc())
    row = body["data"][0]
    assert set(row) == fields(docs.AgentRowDoc())
    assert set(row["metrics"]) == fields(docs.AgentMetricsDoc())
    assert set(row["metrics"]["rating_distribution"]) == fields(docs.RatingDistributionDoc())
    one = api().get(f"/api/v1/agents/{answered.human.pk}/stats", JAN15).json()
    assert set(one["data"]) == fields(docs.AgentStatsDataDoc())
