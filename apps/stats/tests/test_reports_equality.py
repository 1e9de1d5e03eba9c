"""The issue's test: over a seeded month (AI, human, escalated both ways, missed, rated, closed and
SLA-breached chats across channels and a department), every figure of build_report equals what
GET /api/v1/stats/... answers for the same window; percentiles, which the API has not, are within
the histogram's bound of a direct computation over the chats."""

from __future__ import annotations

import math
from datetime import date, timedelta

import pytest

from apps.agents.models import Department
from apps.chats import services as chat_services
from apps.chats.models import Chat
from apps.routing import sla
from apps.routing.models import SlaClock
from apps.stats import facts, histogram
from apps.stats.models import REPORT_COUNTERS, DailyReportFacts
from apps.stats.reports import build_report

from . import reference
from .conftest import midnight, msk

pytestmark = pytest.mark.django_db

JANUARY = {"from": "2025-01-01", "to": "2025-02-01"}
BOUND = 2 ** (1 / 8) - 1  # apps.stats.histogram: the geometric middle of a bucket


@pytest.fixture
def month(widget, talk):
    """January 2025, every day: a widget chat a person answers after 10 s + 7 s per day and closes;
    even days a telegram chat the AI answers, rated; every third a missed vk chat; every fourth an
    AI-to-human chat, rated 4; every fifth a human-to-AI chat; the person's chats of even days in
    the department Sales; SLA clocks met or breached on alternate days."""
    sales = Department.objects.create(widget=widget, name="Sales")
    talk.sales = sales
    for d in range(1, 32):
        human = talk.at(msk(2025, 1, d, 9)).visitor()
        if d % 2 == 0:
            Chat.objects.filter(pk=human.pk).update(department=sales)
        talk.at(msk(2025, 1, d, 9) + timedelta(seconds=10 + 7 * d)).reply(human, talk.human if d % 3 else talk.other)
        talk.at(msk(2025, 1, d, 9 + d % 5, 30))
        chat_services.close_chat(widget=widget, chat=Chat.objects.get(pk=human.pk))
        if d % 2 == 0:
            bot = talk.at(msk(2025, 1, d, 12)).visitor(channel="telegram")
            talk.at(msk(2025, 1, d, 12, 0, d % 9 + 1)).reply(bot, talk.ai)
            talk.at(msk(2025, 1, d, 12, 5)).rate(bot, d % 5 + 1)
        if d % 3 == 0:
            talk.at(msk(2025, 1, d, 23, 59, 59)).visitor(channel="vk")
        if d % 4 == 0:
            up = talk.at(msk(2025, 1, d, 15)).visitor()
            talk.at(msk(2025, 1, d, 15, 0, 3)).reply(up, talk.ai)
            talk.at(msk(2025, 1, d, 15, 2)).reply(up, talk.human)
            talk.at(msk(2025, 1, d, 15, 3)).rate(up, 4)
        if d % 5 == 0:
            down = talk.at(msk(2025, 1, d, 16)).visitor(channel="telegram")
            talk.at(msk(2025, 1, d, 16, 1)).reply(down, talk.human)
            talk.at(msk(2025, 1, d, 16, 2)).reply(down, talk.ai)
        # the person's chat's first-response clock, decided through routing's SLA service
        start = msk(2025, 1, d, 9)
        clock = SlaClock.objects.create(
            widget=widget,
            chat=human,
            kind=SlaClock.Kind.FIRST_RESPONSE,
            started_at=start,
            due_at=start + timedelta(seconds=60),
        )
        owner = Chat.objects.get(pk=human.pk)
        if d % 2:
            sla.breach(widget=widget, clock=clock, agent_id=owner.agent_id, now=start + timedelta(seconds=60))
        else:
            sla.stop_clocks(
                widget=widget, chat=owner, kinds=(SlaClock.Kind.FIRST_RESPONSE,), now=start + timedelta(seconds=30)
            )
    return talk


def exact_percentile(values: list[int], q: float) -> int | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q * len(ordered))) - 1]


def close_enough(stored: int | None, exact: int | None) -> bool:
    if exact is None or stored is None:
        return stored is exact
    if exact < histogram.BASE_MS:
        return stored < histogram.BASE_MS
    return abs(stored - exact) <= BOUND * exact + 1


def test_the_report_equals_the_statistics_api(api, widget, month):
    client = api(scopes=["stats:read"])
    report = build_report(widget=widget, start=date(2025, 1, 1), end=date(2025, 1, 31))
    stats = client.get("/api/v1/stats", JANUARY).json()["data"]["metrics"]
    assert stats["chats_total"] > 60 and stats["chats_missed"] > 5  # the month is what it says
    assert report["totals"]["chats"] == stats["chats_total"]
    assert report["totals"]["missed"] == stats["chats_missed"]
    assert report["handling"] == {
        "ai": stats["chats_handled_ai"],
        "human": stats["chats_handled_human"],
        "ai_to_human": stats["chats_ai_to_human"],
        "human_to_ai": stats["chats_human_to_ai"],
        "missed": stats["chats_missed"],
    }
    assert min(report["handling"].values()) > 0
    assert report["rating"]["average"] == stats["rating_average"]

    series = client.get("/api/v1/stats/timeseries", {**JANUARY, "metric": "chats_total"}).json()["data"]["buckets"]
    per_day = [sum(column[i] for column in report["chats_by_channel"].values()) for i in range(31)]
    assert per_day == [bucket["metrics"]["chats_total"] for bucket in series]

    channels = client.get("/api/v1/stats/channels", JANUARY).json()["data"]
    assert {row["channel"]: row["chats_accepted"] + row["chats_missed"] for row in channels} == {
        channel: sum(days) for channel, days in report["chats_by_channel"].items()
    }
    assert set(report["chats_by_channel"]) == {"widget", "telegram", "vk"}

    sla = client.get("/api/v1/stats/sla", JANUARY).json()["data"]["total"]
    assert report["sla"] == {
        "met": sum(kind["met"] for kind in sla.values()),
        "breached": sum(kind["breached"] for kind in sla.values()),
    }
    assert report["sla"] == {"met": 15, "breached": 16}

    agents = {row["agent_id"]: row["metrics"] for row in client.get("/api/v1/agents/stats", JANUARY).json()["data"]}
    assert len(report["operators"]) == len(agents) == 3
    rated = 0
    for row in report["operators"]:
        api_row = agents[row["agent_id"]]
        assert row["chats"] == api_row["chats_total"]
        assert row["accepted"] == api_row["chats_accepted"]
        assert row["missed"] == api_row["chats_missed"]
        assert row["rating_average"] == api_row["rating_average"]
        assert row["rating_count"] == sum(api_row["rating_distribution"].values())
        rated += row["rating_count"]
    distribution = {v: sum(a["rating_distribution"][v] for a in agents.values()) for v in "12345"}
    assert report["rating"]["distribution"] == distribution
    assert report["rating"]["count"] == rated == sum(distribution.values())


def test_percentiles_are_within_the_histograms_bound_of_the_chats(widget, month):
    report = build_report(widget=widget, start=date(2025, 1, 1), end=date(2025, 1, 31))
    firsts, resolutions = [], []
    for i, day in enumerate(date(2025, 1, 1) + timedelta(days=n) for n in range(31)):
        chats = Chat.objects.filter(
            widget=widget, created_at__gte=midnight(day), created_at__lt=midnight(day + timedelta(days=1))
        )
        first = [ms for chat in chats if (ms := reference.first_response_ms(chat)) is not None]
        resolved = [facts.whole_ms(c.closed_at - c.created_at) for c in chats if c.closed_at]
        firsts += first
        resolutions += resolved
        for key, values in (("first_response", first), ("resolution", resolved)):
            for name, q in (("median_ms", 0.5), ("p90_ms", 0.9)):
                assert close_enough(report[key][name][i], exact_percentile(values, q)), (day, key, name)
    assert close_enough(report["totals"]["first_response_median_ms"], exact_percentile(firsts, 0.5))
    assert close_enough(report["totals"]["resolution_median_ms"], exact_percentile(resolutions, 0.5))
    assert resolutions and firsts


def test_departments_and_an_operators_own_figures(api, widget, month):
    report = build_report(widget=widget, start=date(2025, 1, 1), end=date(2025, 1, 31))
    (sales,) = report["departments"]
    in_sales = Chat.objects.filter(widget=widget, department=month.sales)
    assert sales["chats"] == in_sales.count() == 15
    assert sales["missed"] == 0
    direct = [ms for chat in in_sales if (ms := reference.first_response_ms(chat)) is not None]
    assert close_enough(sales["first_response_median_ms"], exact_percentile(direct, 0.5))

    own = build_report(widget=widget, start=date(2025, 1, 1), end=date(2025, 1, 31), agent_id=month.human.pk)
    api_row = api().get(f"/api/v1/agents/{month.human.pk}/stats", JANUARY).json()["data"]["metrics"]
    (me,) = own["operators"]
    assert own["totals"]["chats"] == me["chats"] == api_row["chats_total"]
    assert own["rating"]["count"] == sum(api_row["rating_distribution"].values())
    assert own["departments"] == []
    api_sla = api().get("/api/v1/stats/sla", JANUARY).json()["data"]["agents"]
    (mine,) = [row for row in api_sla if row["agent_id"] == month.human.pk]
    kinds = [value for name, value in mine.items() if name != "agent_id"]
    assert own["sla"] == {"met": sum(k["met"] for k in kinds), "breached": sum(k["breached"] for k in kinds)}
    assert own["sla"]["met"] and own["sla"]["breached"]
    assert sum(sum(days) for days in own["chats_by_channel"].values()) == api_row["chats_total"]


def test_the_rebuild_writes_the_same_report_rollups(widget, month):
    def rollups():
        rows = DailyReportFacts.objects.filter(widget=widget).values_list(
            "day", "channel", "is_internal", "agent_id", "department_id", *REPORT_COUNTERS
        )
        totals: dict = {}
        for row in rows:
            key, values = row[:5], row[5:]
            totals[key] = [a + b for a, b in zip(totals.get(key, [0] * len(values)), values, strict=True)]
        return {k: v for k, v in totals.items() if any(v)}

    incremental = rollups()
    facts.rebuild_widget_facts(widget_id=widget.pk)
    assert rollups() == incremental
