"""/v1/proactive-messages: list, create, read, PATCH, DELETE and stats (product-decisions.md "The
widget as the owner's platform", proactive messages)."""

import itertools
from datetime import date

import pytest

from apps.audit.models import AuditEntry
from apps.chats.tests.factories import AgentFactory
from apps.proactive.models import ProactiveCount, ProactiveMessage
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db
_keys = itertools.count()

URL = "/api/v1/proactive-messages"
READ, WRITE = ["campaigns:read"], ["campaigns:write"]
MEMBERS = {
    "id",
    "name",
    "enabled",
    "text_i18n",
    "agent_id",
    "rules",
    "frequency",
    "priority",
    "created_at",
    "updated_at",
}
DEFAULT_RULES = {
    "url_patterns": [],
    "time_on_page_seconds": 0,
    "visits_at_least": 1,
    "attributes": {},
    "only_when_open": False,
}


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"proactive-{next(_keys)}"}


def url(row_or_id) -> str:
    return f"{URL}/{getattr(row_or_id, 'pk', row_or_id)}"


def body(**overrides) -> dict:
    return {"name": "Pricing help", "text_i18n": {"en": "Questions about plans?"}, **overrides}


def message(widget, **kwargs) -> ProactiveMessage:
    values = {"name": "M", "text_i18n": {"en": "Hi"}, "rules": DEFAULT_RULES, **kwargs}
    return ProactiveMessage.objects.create(widget=widget, **values)


def snapshot(widget) -> list:
    return list(ProactiveMessage.objects.filter(widget=widget).order_by("id").values())


def create(api, data, scopes=WRITE):
    return api(scopes=scopes).post(URL, data, format="json", **idem())


# --- list and read -------------------------------------------------------------------------------------


def test_list_serves_the_widgets_messages_oldest_first(api, widget, other_widget):
    rows = [message(widget, name="A"), message(widget, name="B", enabled=False)]
    message(other_widget, name="Foreign")
    data = api(scopes=READ).get(URL).json()["data"]
    assert [r["id"] for r in data] == [r.pk for r in rows]
    assert set(data[0]) == MEMBERS and data[1]["enabled"] is False


def test_list_pages_by_cursor(api, widget):
    ids = [message(widget, name=f"M{n}").pk for n in range(5)]
    client = api(scopes=READ)
    first = client.get(URL, {"limit": 3}).json()
    second = client.get(URL, {"limit": 3, "cursor": first["next_cursor"]}).json()
    assert [r["id"] for r in first["data"] + second["data"]] == ids and second["next_cursor"] is None


def test_list_refuses_unknown_parameters(api, widget):
    assert_problem(api(scopes=READ).get(URL, {"name": "x"}), 422)


def test_read_answers_one_and_a_foreign_id_is_404(api, widget, other_widget):
    row = message(widget, name="Mine", priority=5)
    got = api(scopes=READ).get(url(row)).json()
    assert got["name"] == "Mine" and got["priority"] == 5 and set(got) == MEMBERS
    foreign = message(other_widget, name="Theirs")
    assert_problem(api(scopes=READ).get(url(foreign)), 404)
    assert_problem(api(scopes=READ).get(url(999999)), 404)


# --- create ---------------------------------------------------------------------------------------------


def test_create_stores_defaults_audits_and_purges_the_config(api, client, widget):
    config = f"/api/visitor/v1/{widget.button_guid}/config"
    assert client.get(config).json()["proactive_messages"] == []  # cached now
    response = create(api, body())
    assert response.status_code == 201, response.content
    got = response.json()
    assert got["enabled"] is True and got["frequency"] == "once" and got["priority"] == 0
    assert got["rules"] == DEFAULT_RULES and got["agent_id"] is None
    row = ProactiveMessage.objects.get(pk=got["id"], widget=widget)
    entry = AuditEntry.objects.get(action="proactive_message.created", target_id=str(row.pk))
    assert entry.widget_id == widget.pk
    assert [m["id"] for m in client.get(config).json()["proactive_messages"]] == [row.pk]


def test_create_takes_every_member(api, widget):
    agent = AgentFactory(widget=widget, name="Olga")
    rules = {
        "url_patterns": ["https://shop.example/pricing*", "*/checkout?step=*"],
        "time_on_page_seconds": 30,
        "visits_at_least": 2,
        "attributes": {"plan": "free", "trial": True, "seats": 3},
        "only_when_open": True,
    }
    got = create(
        api,
        body(
            enabled=False,
            text_i18n={"en": "Hi", "ru": "Привет", "ar": "مرحبا"},
            agent_id=agent.pk,
            rules=rules,
            frequency="once_per_session",
            priority=-7,
        ),
    ).json()
    assert got["agent_id"] == agent.pk and got["rules"] == rules and got["priority"] == -7
    assert got["text_i18n"] == {"en": "Hi", "ru": "Привет", "ar": "مرحبا"}
    assert got["frequency"] == "once_per_session" and got["enabled"] is False


def test_a_taken_name_is_409_name_taken_and_changes_nothing(api, widget, other_widget):
    message(other_widget, name="Pricing help")  # another widget's name is free
    assert create(api, body()).status_code == 201
    before = snapshot(widget)
    assert_problem(create(api, body(text_i18n={"de": "Hallo"})), 409, "name_taken")
    assert snapshot(widget) == before


def test_an_agent_of_another_widget_is_422_like_a_missing_one(api, widget, other_widget):
    foreign = AgentFactory(widget=other_widget)
    for agent_id in (foreign.pk, 999999):
        problem = assert_problem(create(api, body(agent_id=agent_id)), 422)
        assert "agent_id" in problem["errors"]
    assert snapshot(widget) == []


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"name": ""}, "name"),
        ({"name": "x" * 101}, "name"),
        ({"text_i18n": {}}, "text_i18n"),
        ({"text_i18n": {"fr": "Salut"}}, "text_i18n"),
        ({"text_i18n": {"en": " "}}, "text_i18n"),
        ({"text_i18n": {"en": "x" * 1001}}, "text_i18n"),
        ({"text_i18n": "Hi"}, "text_i18n"),
        ({"frequency": "daily"}, "frequency"),
        ({"priority": 1001}, "priority"),
        ({"priority": "1"}, "priority"),
        ({"enabled": "yes"}, "enabled"),
        ({"rules": {"url_patterns": ["x"] * 21}}, "rules"),
        ({"rules": {"url_patterns": [""]}}, "rules"),
        ({"rules": {"time_on_page_seconds": -1}}, "rules"),
        ({"rules": {"time_on_page_seconds": 86401}}, "rules"),
        ({"rules": {"visits_at_least": 0}}, "rules"),
        ({"rules": {"attributes": {"Bad Key": "x"}}}, "rules"),
        ({"rules": {"attributes": {"plan": ["x"]}}}, "rules"),
        ({"rules": {"attributes": {"plan": "x" * 501}}}, "rules"),
        ({"rules": {"only_when_open": 1}}, "rules"),
        ({"rules": {"colour": "red"}}, "rules"),
        ({"agent_id": "1"}, "agent_id"),
        ({"extra": 1}, "extra"),
    ],
)
def test_bad_input_is_422_at_its_member_and_writes_nothing(api, widget, bad, field):
    problem = assert_problem(create(api, body(**bad)), 422)
    assert any(key == field or key.startswith(f"{field}.") for key in problem["errors"]), problem["errors"]
    assert snapshot(widget) == []


def test_name_and_text_are_required(api, widget):
    problem = assert_problem(create(api, {}), 422)
    assert {"name", "text_i18n"} <= set(problem["errors"])


# --- change and delete ----------------------------------------------------------------------------------


def test_patch_merges_and_audits(api, widget):
    row = message(widget, name="Old", priority=1)
    got = api(scopes=WRITE).patch(url(row), {"enabled": False, "priority": 9}, format="json", **idem()).json()
    assert got["name"] == "Old" and got["enabled"] is False and got["priority"] == 9
    entry = AuditEntry.objects.get(action="proactive_message.changed", target_id=str(row.pk))
    assert entry.widget_id == widget.pk


def test_patch_to_a_taken_name_is_409_and_changes_nothing(api, widget):
    message(widget, name="Taken")
    row = message(widget, name="Mine")
    before = snapshot(widget)
    assert_problem(api(scopes=WRITE).patch(url(row), {"name": "Taken"}, format="json", **idem()), 409, "name_taken")
    assert snapshot(widget) == before


def test_patch_with_a_foreign_agent_is_422_and_a_foreign_id_404(api, widget, other_widget):
    row = message(widget)
    foreign_agent = AgentFactory(widget=other_widget)
    client = api(scopes=WRITE)
    assert_problem(client.patch(url(row), {"agent_id": foreign_agent.pk}, format="json", **idem()), 422)
    foreign = message(other_widget, name="Theirs")
    assert_problem(client.patch(url(foreign), {"priority": 3}, format="json", **idem()), 404)
    assert ProactiveMessage.objects.get(pk=foreign.pk).priority == 0


def test_delete_removes_it_with_its_counts_and_audits(api, widget, other_widget):
    row = message(widget)
    ProactiveCount.objects.create(widget=widget, message=row, day=date(2026, 1, 1), shown=3)
    foreign = message(other_widget, name="Theirs")
    client = api(scopes=WRITE)
    assert_problem(client.delete(url(foreign), **idem()), 404)
    assert client.delete(url(row), **idem()).status_code == 204
    assert not ProactiveMessage.objects.filter(pk=row.pk).exists()
    assert not ProactiveCount.objects.filter(message_id=row.pk).exists()
    assert AuditEntry.objects.filter(action="proactive_message.deleted", target_id=str(row.pk)).exists()
    assert ProactiveMessage.objects.filter(pk=foreign.pk).exists()


# --- scopes ---------------------------------------------------------------------------------------------


def test_each_route_needs_its_scope(api, widget):
    row = message(widget)
    reader, writer = api(scopes=READ), api(scopes=WRITE)
    assert_problem(writer.get(URL), 403, "missing_scope")
    assert_problem(writer.get(url(row)), 403, "missing_scope")
    assert_problem(writer.get(f"{url(row)}/stats"), 403, "missing_scope")
    assert_problem(reader.post(URL, body(), format="json", **idem()), 403, "missing_scope")
    assert_problem(reader.patch(url(row), {"priority": 1}, format="json", **idem()), 403, "missing_scope")
    assert_problem(reader.delete(url(row), **idem()), 403, "missing_scope")
    assert snapshot(widget)[0]["priority"] == 0


def test_without_a_token_it_is_401(client, widget):
    assert_problem(client.get(URL), 401)


# --- stats ----------------------------------------------------------------------------------------------


def counts(widget, row, day, shown=0, opened=0, replied=0):
    ProactiveCount.objects.create(widget=widget, message=row, day=day, shown=shown, opened=opened, replied=replied)


def test_stats_sum_the_days_of_the_window(api, widget):
    row = message(widget)
    counts(widget, row, date(2026, 3, 1), shown=5, opened=2, replied=1)
    counts(widget, row, date(2026, 3, 2), shown=7, opened=3)
    counts(widget, row, date(2026, 3, 5), shown=100)
    client = api(scopes=READ)
    stats = f"{url(row)}/stats"
    assert client.get(stats, {"from": "2026-03-01", "to": "2026-03-03"}).json() == {
        "shown": 12,
        "opened": 5,
        "replied": 1,
    }
    assert client.get(stats, {"from": "2026-03-02", "to": "2026-03-06"}).json()["shown"] == 107
    # a day counts when its midnight is in [from, to): from noon on the 1st leaves the 1st out
    assert client.get(stats, {"from": "2026-03-01T12:00:00", "to": "2026-03-03"}).json()["shown"] == 7
    assert client.get(stats, {"from": "2027-01-01", "to": "2027-02-01"}).json() == {
        "shown": 0,
        "opened": 0,
        "replied": 0,
    }


def test_stats_default_to_the_last_30_days(api, widget):
    from django.utils import timezone

    from apps.core.timeparse import business_tz

    row = message(widget)
    today = timezone.now().astimezone(business_tz()).date()
    counts(widget, row, today, shown=2)
    counts(widget, row, date(2000, 1, 1), shown=50)
    assert api(scopes=READ).get(f"{url(row)}/stats").json()["shown"] == 2


def test_stats_refuse_a_bad_window_and_a_foreign_id(api, widget, other_widget):
    row = message(widget)
    client = api(scopes=READ)
    assert_problem(client.get(f"{url(row)}/stats", {"from": "yesterday"}), 422)
    assert_problem(client.get(f"{url(row)}/stats", {"from": "2026-03-05", "to": "2026-03-01"}), 422)
    assert_problem(client.get(f"{url(row)}/stats", {"period": "month"}), 422)
    foreign = message(other_widget, name="Theirs")
    counts(other_widget, foreign, date(2026, 3, 1), shown=9)
    assert_problem(client.get(f"{url(foreign)}/stats"), 404)
