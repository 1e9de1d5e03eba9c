"""GET /v1/stats, /v1/stats/channels, /v1/stats/timeseries."""

import pytest

from apps.chats.tests.factories import ChatFactory, ContactFactory
from apps.stats import facts, selectors
from tests.support.plugin import assert_problem

from ..conftest import msk

pytestmark = pytest.mark.django_db

STATS, CHANNELS, SERIES = "/api/v1/stats", "/api/v1/stats/channels", "/api/v1/stats/timeseries"
JAN15 = {"from": "2025-01-15", "to": "2025-01-16"}


@pytest.fixture
def day(talk):
    """Jan 15 (Moscow): a missed widget chat, a tg chat the AI answered, a vk chat a person answered."""
    talk.at(msk(2025, 1, 15, 9)).visitor()
    tg = talk.at(msk(2025, 1, 15, 10)).visitor(channel="tg")
    talk.at(msk(2025, 1, 15, 10, 0, 30)).reply(tg, talk.ai)
    vk = talk.at(msk(2025, 1, 15, 11)).visitor(channel="vk")
    talk.at(msk(2025, 1, 15, 11, 1, 30)).reply(vk, talk.human)
    talk.at(msk(2025, 1, 15, 11, 2)).rate(vk, 5)
    return talk


# --- /v1/stats -----------------------------------------------------------------------------------


def test_stats_shape_and_figures(api, day):
    body = api(scopes=["stats:read"]).get(STATS, JAN15).json()
    assert body["data"]["from"] == "2025-01-15T00:00:00+03:00"
    assert body["data"]["to"] == "2025-01-16T00:00:00+03:00"
    assert body["data"]["timezone"] == "Europe/Moscow"
    assert body["data"]["metrics"] == {
        "chats_total": 3,
        "chats_missed": 1,
        "chats_accepted": 2,
        "chats_accepted_ai": 1,
        "chats_accepted_human": 1,
        "chats_handled_ai": 1,
        "chats_handled_human": 1,
        "chats_ai_to_human": 0,
        "chats_human_to_ai": 0,
        "messages_total": 5,
        "avg_response_time_seconds": 60.0,
        "rating_average": 5.0,
    }


def test_first_response_is_opt_in_and_metric_keeps_the_documented_order(api, day):
    body = api().get(STATS, {**JAN15, "metric": "avg_first_response_seconds,chats_total"}).json()
    assert list(body["data"]["metrics"].items()) == [("chats_total", 3), ("avg_first_response_seconds", 60.0)]


def test_default_window_is_the_trailing_30_days(api, widget):
    data = api().get(STATS).json()["data"]
    assert data["to"].endswith("T00:00:00+03:00") and data["from"].endswith("T00:00:00+03:00")
    assert list(data["metrics"]) == list(selectors.WIDGET_METRICS)


def test_an_offset_in_from_is_honoured(api, day):
    # 2025-01-15T07:00Z is 10:00 in Moscow: the widget chat at 09:00 is left out.
    data = api().get(STATS, {"from": "2025-01-15T07:00:00Z", "to": "2025-01-16"}).json()["data"]
    assert data["from"] == "2025-01-15T10:00:00+03:00" and data["metrics"]["chats_total"] == 2


@pytest.mark.parametrize(
    "params, field",
    [
        ({"period": "today", "from": "2025-01-01"}, "period"),
        ({"period": "yesterday", "to": "2025-01-01"}, "period"),
        ({"period": "quarter"}, "period"),
        ({"metric": "chats_total,bogus"}, "metric"),
        ({"metric": "chats_total,"}, "metric"),
        ({"from": "not-a-date"}, "from"),
        ({"from": "2025-01-02", "to": "2025-01-02"}, "to"),
        ({"from": "2025-01-03", "to": "2025-01-02"}, "to"),
        ({"limit": "10"}, "limit"),
        ({"unknown": "1"}, "unknown"),
    ],
)
def test_stats_refuses_bad_input_with_422(api, widget, params, field):
    body = assert_problem(api().get(STATS, params), 422)
    assert field in body["errors"], body


def test_a_repeated_parameter_is_422(api, widget):
    body = assert_problem(api().get(f"{STATS}?period=today&period=week"), 422)
    assert "period" in body["errors"]


@pytest.mark.parametrize("path", [STATS, CHANNELS, SERIES, "/api/v1/agents/stats"])
def test_without_a_token_401_and_without_stats_read_403(api, client, widget, path):
    assert_problem(client.get(path), 401)
    body = assert_problem(api(scopes=["chats:read", "agents:read"]).get(path), 403, "missing_scope")
    assert body["required_scopes"] == ["stats:read"]


def test_other_widgets_chats_are_never_counted(api, day, other_widget):
    chat = ChatFactory(contact=ContactFactory(widget=other_widget), created_at=msk(2025, 1, 15, 12))
    facts.chat_created(chat=chat)
    assert api().get(STATS, JAN15).json()["data"]["metrics"]["chats_total"] == 3


# --- /v1/stats/channels ------------------------------------------------------------------------------


def test_channels_per_code_without_empty_or_internal_ones(api, day, widget):
    internal = ChatFactory(contact=ContactFactory(widget=widget), is_internal=True, created_at=msk(2025, 1, 15, 12))
    facts.chat_created(chat=internal)
    body = api().get(CHANNELS, JAN15).json()
    assert body["from"] == "2025-01-15T00:00:00+03:00" and body["timezone"] == "Europe/Moscow"
    assert body["data"] == [
        {"channel": "tg", "chats_accepted": 1, "chats_accepted_ai": 1, "chats_accepted_human": 0, "chats_missed": 0},
        {"channel": "vk", "chats_accepted": 1, "chats_accepted_ai": 0, "chats_accepted_human": 1, "chats_missed": 0},
        {
            "channel": "widget",
            "chats_accepted": 0,
            "chats_accepted_ai": 0,
            "chats_accepted_human": 0,
            "chats_missed": 1,
        },
    ]
    assert api().get(CHANNELS, {"from": "2025-01-16", "to": "2025-01-17"}).json()["data"] == []


@pytest.mark.parametrize("params", [{"metric": "chats_total"}, {"period": "today", "to": "2025-01-01"}])
def test_channels_refuse_bad_input_with_422(api, widget, params):
    assert_problem(api().get(CHANNELS, params), 422)


# --- /v1/stats/timeseries ----------------------------------------------------------------------------


def test_timeseries_day_buckets_are_dense_and_zero_filled(api, day):
    body = api().get(SERIES, {"from": "2025-01-14", "to": "2025-01-17", "metric": "chats_total,messages_total"})
    data = body.json()["data"]
    assert (data["interval"], data["timezone"]) == ("day", "Europe/Moscow")
    assert [(b["from"], b["to"], b["metrics"]) for b in data["buckets"]] == [
        ("2025-01-14T00:00:00+03:00", "2025-01-15T00:00:00+03:00", {"chats_total": 0, "messages_total": 0}),
        ("2025-01-15T00:00:00+03:00", "2025-01-16T00:00:00+03:00", {"chats_total": 3, "messages_total": 5}),
        ("2025-01-16T00:00:00+03:00", "2025-01-17T00:00:00+03:00", {"chats_total": 0, "messages_total": 0}),
    ]


def test_timeseries_weeks_and_months(api, day):
    weeks = api().get(SERIES, {"from": "2025-01-01", "to": "2025-02-01", "interval": "week"}).json()["data"]["buckets"]
    assert [b["from"][:10] for b in weeks] == ["2025-01-01", "2025-01-06", "2025-01-13", "2025-01-20", "2025-01-27"]
    assert [b["metrics"]["chats_total"] for b in weeks] == [0, 0, 3, 0, 0]
    months = api().get(SERIES, {"from": "2024-12-01", "to": "2025-03-01", "interval": "month"}).json()["data"]
    assert [b["metrics"]["chats_accepted"] for b in months["buckets"]] == [0, 2, 0]
    assert list(months["buckets"][0]["metrics"]) == list(selectors.TIMESERIES_METRICS)


def test_366_buckets_pass_and_367_are_422(api, widget):
    assert api().get(SERIES, {"from": "2024-01-01", "to": "2025-01-01"}).status_code == 200
    body = assert_problem(api().get(SERIES, {"from": "2024-01-01", "to": "2025-01-02"}), 422)
    assert "interval" in body["errors"]
    assert api().get(SERIES, {"from": "2000-01-01", "to": "2025-01-02", "interval": "month"}).status_code == 200
    assert_problem(api().get(SERIES, {"from": "1990-01-01", "to": "2025-01-02", "interval": "month"}), 422)


@pytest.mark.parametrize(
    "params, field",
    [
        ({"interval": "hour"}, "interval"),
        ({"metric": "avg_response_time_seconds"}, "metric"),
        ({"period": "month", "from": "2025-01-01"}, "period"),
        ({"cursor": "x"}, "cursor"),
    ],
)
def test_timeseries_refuses_bad_input_with_422(api, widget, params, field):
    assert field in assert_problem(api().get(SERIES, params), 422)["errors"]


def test_a_window_before_moscow_had_a_whole_minute_offset_is_written_in_utc(api, widget):
    # Moscow kept local mean time (+02:30:17) until 1919: an offset RFC 3339 cannot spell, so such
    # bounds are written in UTC (schemathesis drew a `from` in 1913 and read `+02:30:17`).
    data = api().get(STATS, {"from": "1913-05-09", "to": "1913-05-10"}).json()["data"]
    assert data["from"] == "1913-05-08T21:29:43+00:00" and data["to"] == "1913-05-09T21:29:43+00:00"
    series = api().get(SERIES, {"from": "1913-05-09", "to": "1913-05-11"}).json()["data"]["buckets"]
    assert [b["from"] for b in series] == ["1913-05-08T21:29:43+00:00", "1913-05-09T21:29:43+00:00"]
