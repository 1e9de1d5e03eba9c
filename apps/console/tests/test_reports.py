"""/console/reports/: the page's figures are build_report's, the CSV per chart, the operator's own
scope and 403, an owner's foreign agent 404, and every bad range a clear refusal."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest
from django.utils import dateformat, timezone
from django.utils.html import escape

from apps.agents.tests.factories import HumanAgentFactory
from apps.chats import services
from apps.chats.models import Chat
from apps.chats.tests.factories import ContactFactory
from apps.console import report_charts
from apps.console.inbox import chat_list_url
from apps.stats.reports import build_report, report_tz

pytestmark = pytest.mark.django_db

URL = "/console/reports/"


def converse(widget, *, agent=None, channel="widget", rating=None) -> Chat:
    contact = ContactFactory(widget=widget)
    message = services.post_client_message(
        widget=widget, contact=contact, data=services.MessageInput(body="hello"), channel=channel
    )
    chat = Chat.objects.get(pk=message.chat_id)
    if agent is not None:
        services.post_agent_message(widget=widget, chat=chat, agent=agent, data=services.MessageInput(body="hi"))
    if rating is not None:
        services.rate_chat(widget=widget, chat=chat, value=rating)
    return chat


@pytest.fixture
def month(widget, owner, operator, colleague):
    """Today's chats: answered by each, on two channels, rated, and one nobody answered."""
    converse(widget, agent=operator, rating=5)
    converse(widget, agent=operator, channel="tg", rating=2)
    converse(widget, agent=colleague, rating=4)
    converse(widget, agent=owner, channel="tg")
    converse(widget)
    return widget


def today(widget):
    return timezone.now().astimezone(report_tz(widget)).date()


def page_data(response) -> dict:
    html = response.content.decode()
    start = html.index('<script id="report-data" type="application/json">') + len(
        '<script id="report-data" type="application/json">'
    )
    return json.loads(html[start : html.index("</script>", start)])


def read_csv(response) -> list[list[str]]:
    return list(csv.reader(io.StringIO(response.content.decode())))


# --- the owner's page ------------------------------------------------------------------------------


def test_the_owners_page_draws_build_reports_figures(owner_console, month):
    # Given a month of chats; When the owner opens the last 30 days
    response = owner_console.get(URL)

    # Then every chart's numbers are the report's for those days
    assert response.status_code == 200
    end = today(month)
    report = build_report(widget=month, start=end - timedelta(days=29), end=end)
    charts = page_data(response)["charts"]
    assert {s["label"]: s["data"] for s in charts["chats_by_channel"]["datasets"]} == {
        "Website": report["chats_by_channel"]["widget"],
        "Telegram": report["chats_by_channel"]["tg"],
    }
    assert charts["rating"]["datasets"][0]["data"] == [report["rating"]["distribution"][str(v)] for v in range(1, 6)]
    assert charts["handling"]["datasets"][0]["data"] == [
        report["handling"][k] for k in ("ai", "human", "ai_to_human", "human_to_ai", "missed")
    ]
    assert charts["sla"]["datasets"][0]["data"] == [report["sla"]["met"], report["sla"]["breached"]]
    median = [None if v is None else round(v / 1000, 1) for v in report["first_response"]["median_ms"]]
    assert charts["first_response"]["datasets"][0]["data"] == median
    assert report["totals"]["chats"] == 5
    assert sum(report["handling"].values()) >= 5
    html = response.content.decode()
    assert f'<strong class="reports-figure">{report["totals"]["chats"]}</strong>' in html
    assert "By department" in html and "Olga" in html and "Pavel" in html


def test_every_bar_links_to_the_chat_list_filtered_to_what_it_counts(owner_console, month):
    response = owner_console.get(URL + "?range=7")
    charts = page_data(response)["charts"]
    end = today(month)
    first = (end - timedelta(days=6)).isoformat()
    telegram = next(s for s in charts["chats_by_channel"]["datasets"] if s["label"] == "Telegram")
    assert telegram["links"][-1] == chat_list_url(**{"from": end.isoformat(), "to": end.isoformat(), "channel": "tg"})
    assert charts["handling"]["datasets"][0]["links"][4] == chat_list_url(
        **{"from": first, "to": end.isoformat(), "handling": "missed"}
    )
    assert charts["rating"]["datasets"][0]["links"][4] == chat_list_url(
        **{"from": first, "to": end.isoformat(), "rating": "5"}
    )
    # the table view carries the same links, so the keyboard reaches every drill-down
    assert telegram["links"][-1].replace("&", "&amp;") in response.content.decode()


def test_the_day_tables_carry_each_count_with_its_link(owner_console, month):
    # Given today's chats (website 3, Telegram 2); When the owner opens the last 7 days
    html = owner_console.get(URL + "?range=7").content.decode()

    # Then today's row of the channel table holds each count and the total, each a link to its
    # chats (escaped as HTML), and the response-time table's row links the day
    end = today(month)
    day = end.isoformat()
    label = dateformat.format(end, "j M")

    def cell(count, **filters):
        return f'<td><a href="{escape(chat_list_url(**filters))}">{count}</a></td>'

    report = build_report(widget=month, start=end - timedelta(days=6), end=end)
    counts = {"widget": 3, "tg": 2}
    assert (
        f'<tr><th scope="row">{label}</th>'
        + "".join(
            cell(counts[code], **{"from": day, "to": day, "channel": code}) for code in report["chats_by_channel"]
        )
        + cell(5, **{"from": day, "to": day})
        + "</tr>"
    ) in html
    first_response = report_charts.duration(report["first_response"]["median_ms"][-1])
    assert "&amp;" in escape(chat_list_url(**{"from": day, "to": day}))
    assert (
        f'<tr><th scope="row"><a href="{escape(chat_list_url(**{"from": day, "to": day}))}">{label}</a></th>'
        f"<td>{escape(first_response)}</td>"
    ) in html
    assert f'<tr><th scope="row">{dateformat.format(end - timedelta(days=1), "j M")}</th>' in html  # a day of 0


def test_the_presets_and_a_custom_range_set_the_days(owner_console, month):
    end = today(month)
    assert len(page_data(owner_console.get(URL + "?range=7"))["charts"]["rating"]["labels"]) == 5
    for days in (7, 30, 90):
        data = page_data(owner_console.get(URL + f"?range={days}"))
        assert len(data["charts"]["chats_by_channel"]["labels"]) == days
    start = end - timedelta(days=365)
    response = owner_console.get(URL, {"range": "custom", "from": start.isoformat(), "to": end.isoformat()})
    assert response.status_code == 200
    assert len(page_data(response)["charts"]["first_response"]["labels"]) == 366


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            {"range": "custom", "from": "2026-02-10", "to": "2026-02-01"},
            "The end date must not be before the start date.",
        ),
        ({"range": "custom", "from": "2025-01-01", "to": "2026-01-02"}, "A report covers at most 366 days."),
        (
            {"range": "custom", "from": "yesterday", "to": "2026-01-02"},
            "Enter both dates of a custom range, as YYYY-MM-DD.",
        ),
        ({"range": "custom", "from": "2026-01-01"}, "Enter both dates of a custom range, as YYYY-MM-DD."),
        ({"from": "0001-01-01", "to": "0001-01-02"}, "Enter both dates of a custom range, as YYYY-MM-DD."),
        ({"from": "2026-13-01", "to": "2026-12-01"}, "Enter both dates of a custom range, as YYYY-MM-DD."),
    ],
)
def test_a_bad_range_is_a_clear_message(owner_console, month, params, message):
    response = owner_console.get(URL, params)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert b'id="report-data"' not in response.content
    csv_response = owner_console.get(URL, {**params, "format": "csv", "chart": "rating"})
    assert csv_response.status_code == 400 and message in csv_response.content.decode()


def test_a_chosen_preset_wins_over_the_dates_the_form_carries(owner_console, month):
    params = {"range": "7", "from": "2026-01-01", "to": "2026-03-01"}
    data = page_data(owner_console.get(URL, params))
    assert len(data["charts"]["chats_by_channel"]["labels"]) == 7


def test_an_unknown_preset_falls_back_to_thirty_days(owner_console, month):
    data = page_data(owner_console.get(URL + "?range=12"))
    assert len(data["charts"]["chats_by_channel"]["labels"]) == 30


# --- CSV -------------------------------------------------------------------------------------------


def test_each_charts_csv_holds_the_reports_numbers(owner_console, month):
    end = today(month)
    start = end - timedelta(days=6)
    report = build_report(widget=month, start=start, end=end)
    params = {"from": start.isoformat(), "to": end.isoformat(), "format": "csv"}

    response = owner_console.get(URL, {**params, "chart": "chats_by_channel"})
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == (
        f'attachment; filename="report-chats_by_channel-{start.isoformat()}-{end.isoformat()}.csv"'
    )
    rows = read_csv(response)
    assert rows[0] == ["day", "tg", "widget", "total"]
    assert rows[-1] == [
        end.isoformat(),
        str(report["chats_by_channel"]["tg"][-1]),
        str(report["chats_by_channel"]["widget"][-1]),
        "5",
    ]
    assert len(rows) == 1 + 7

    rating = read_csv(owner_console.get(URL, {**params, "chart": "rating"}))
    assert rating == [["rating", "chats"]] + [
        [str(v), str(report["rating"]["distribution"][str(v)])] for v in range(1, 6)
    ]
    handling = read_csv(owner_console.get(URL, {**params, "chart": "handling"}))
    assert handling[1:] == [[k, str(v)] for k, v in report["handling"].items() if k in dict(handling[1:])]
    operators = read_csv(owner_console.get(URL, {**params, "chart": "operators"}))
    assert operators[0][:3] == ["agent_id", "name", "chats"]
    assert {row[1] for row in operators[1:]} == {row["name"] for row in report["operators"]}
    for name in ("first_response", "resolution", "sla", "departments"):
        assert owner_console.get(URL, {**params, "chart": name}).status_code == 200


def test_a_csv_without_a_known_chart_is_refused(owner_console, month):
    response = owner_console.get(URL, {"format": "csv", "chart": "nope"})
    assert response.status_code == 400
    assert "chats_by_channel" in response.content.decode()


def test_a_name_that_a_spreadsheet_would_run_is_quoted(owner_console, widget):
    HumanAgentFactory(widget=widget, name="=HYPERLINK(1)")
    rows = read_csv(owner_console.get(URL, {"format": "csv", "chart": "operators"}))
    assert "'=HYPERLINK(1)" in {row[1] for row in rows[1:]}


# --- who sees what ---------------------------------------------------------------------------------


def test_an_operator_sees_only_their_own_figures(console, operator, month):
    response = console.get(URL)
    assert response.status_code == 200
    html = response.content.decode()
    assert "My statistics" in html and "By department" not in html
    end = today(month)
    own = build_report(widget=month, start=end - timedelta(days=29), end=end, agent_id=operator.pk)
    charts = page_data(response)["charts"]
    assert charts["rating"]["datasets"][0]["data"] == [own["rating"]["distribution"][str(v)] for v in range(1, 6)]
    assert [row["name"] for row in own["operators"]] == ["Olga"]
    assert "Pavel" not in html
    # their drill-down opens their own chats only
    assert all(f"agent_id={operator.pk}" in link for link in charts["handling"]["datasets"][0]["links"])
    rows = read_csv(console.get(URL, {"format": "csv", "chart": "operators"}))
    assert [row[1] for row in rows[1:]] == ["Olga"]
    assert console.get(URL, {"agent_id": operator.pk}).status_code == 200


@pytest.mark.parametrize(
    "params", [{"scope": "widget"}, {"agent_id": "colleague"}, {"agent_id": "owner"}, {"agent_id": "x"}]
)
def test_an_operator_asking_for_anyone_elses_figures_gets_403(console, owner, colleague, month, params):
    ids = {"colleague": colleague.pk, "owner": owner.pk}
    params = {k: ids.get(v, v) for k, v in params.items()}
    response = console.get(URL, params)
    assert response.status_code == 403
    assert "owner sees these figures" in response.content.decode()
    assert console.get(URL, {**params, "format": "csv", "chart": "operators"}).status_code == 403


def test_the_owner_reads_one_operators_figures(owner_console, operator, month):
    response = owner_console.get(URL, {"agent_id": operator.pk})
    assert response.status_code == 200
    assert "Reports: Olga" in response.content.decode()
    rows = read_csv(owner_console.get(URL, {"agent_id": operator.pk, "format": "csv", "chart": "operators"}))
    assert [row[1] for row in rows[1:]] == ["Olga"]


def test_an_agent_of_another_widget_is_a_404_like_a_missing_one(owner_console, other_widget, month):
    foreign = HumanAgentFactory(widget=other_widget)
    assert owner_console.get(URL, {"agent_id": foreign.pk}).status_code == 404
    assert owner_console.get(URL, {"agent_id": 987654321}).status_code == 404
    assert owner_console.get(URL, {"agent_id": "abc"}).status_code == 404


def test_signed_out_goes_to_the_sign_in_page(client):
    response = client.get(URL)
    assert response.status_code == 302 and "/console/login/" in response["Location"]


def test_the_header_names_the_page_for_each_role(owner_console, console):
    assert b'href="/console/reports/">Reports</a>' in owner_console.get("/console/").content
    assert b'href="/console/reports/">My statistics</a>' in console.get("/console/").content


def test_the_page_has_no_inline_script_or_style(owner_console, month):
    html = owner_console.get(URL).content.decode()
    assert " style=" not in html and " onclick=" not in html
    scripts = [chunk.split(">", 1)[0] for chunk in html.split("<script")[1:]]
    assert all("src=" in tag or 'type="application/json"' in tag for tag in scripts)


def test_the_query_count_does_not_grow_with_the_chats(owner_console, widget, operator, django_assert_max_num_queries):
    owner_console.get(URL)  # warm the caches the console reads once
    for _ in range(3):
        converse(widget, agent=operator, rating=3)
    with django_assert_max_num_queries(40) as captured:
        owner_console.get(URL)
    few = len(captured)
    for _ in range(10):
        converse(widget, agent=operator, channel="tg", rating=1)
    with django_assert_max_num_queries(few) as captured:
        owner_console.get(URL)
