"""The owner's routing pages: the routing settings (RoutingSettingsInput, put_settings) and each
operator's capacity (AgentPatchInput, update_agent) with the API's rules and words, audited with the
owner as the actor; another widget's ids are 404. The SLA policies' pages: test_settings_sla.py."""

import itertools
import re
from html import unescape

import pytest

from apps.agents.models import Agent
from apps.agents.tests.factories import AIAgentFactory, HumanAgentFactory
from apps.audit.models import AuditEntry
from apps.routing.models import RoutingSettings

from .test_settings_people import api_messages
from .test_settings_people import page_errors as page_html_errors

pytestmark = pytest.mark.django_db

PEOPLE = "/console/settings/people/"
ROUTING = PEOPLE + "routing/"
_keys = itertools.count()

GOOD = {
    "mode": "round_robin",
    "default_capacity": "4",
    "reroute_after_seconds": "60",
    "show_queue_position": "on",
}


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"routing-page-{next(_keys)}"}


def page_errors(response) -> list[str]:
    return [unescape(message) for message in page_html_errors(response)]


def assert_owner_audited(owner, action: str) -> None:
    entry = AuditEntry.objects.filter(action=action).latest("pk")
    assert (entry.actor_type, str(entry.actor_id)) == ("agent", str(owner.pk))


# --- the routing page ---------------------------------------------------------------------------------------


def test_the_owner_sees_the_defaults_with_each_mode_explained(owner_console):
    response = owner_console.get(ROUTING)
    assert response.status_code == 200
    html = response.content.decode()
    assert re.search(r'<input type="radio" name="mode" value="manual"[^>]*checked', html)
    assert "fewest open chats" in html and "longest time ago" in html and "takes a waiting chat" in html
    assert re.search(r'name="default_capacity" value="3"', html)
    assert re.search(r'name="reroute_after_seconds"[^>]*value=""', html) or 'name="reroute_after_seconds" ' in html
    assert re.search(r'<input type="checkbox" name="show_queue_position"[^>]*checked', html)
    assert 'aria-current="page">Routing</a>' in html


def test_the_people_page_links_to_routing(owner_console):
    html = owner_console.get(PEOPLE).content.decode()
    assert f'href="{ROUTING}"' in html


def test_saving_the_routing_is_audited_with_the_owner_as_actor(owner_console, owner, widget):
    response = owner_console.post(ROUTING, GOOD)
    assert response.status_code == 303 and response.url == ROUTING
    row = RoutingSettings.objects.get(widget=widget)
    assert (row.mode, row.default_capacity, row.reroute_after_seconds, row.show_queue_position) == (
        "round_robin",
        4,
        60,
        True,
    )
    assert_owner_audited(owner, "routing.changed")
    page = owner_console.get(ROUTING).content.decode()
    assert "Saved." in page and re.search(r'value="round_robin"[^>]*checked', page)
    assert 'name="reroute_after_seconds" value="60"' in page


def test_an_empty_delay_turns_rerouting_off_and_an_unticked_box_hides_the_position(owner_console, widget):
    owner_console.post(ROUTING, GOOD)
    response = owner_console.post(ROUTING, {"mode": "least_busy", "default_capacity": "2", "reroute_after_seconds": ""})
    assert response.status_code == 303
    row = RoutingSettings.objects.get(widget=widget)
    assert (row.mode, row.default_capacity, row.reroute_after_seconds, row.show_queue_position) == (
        "least_busy",
        2,
        None,
        False,
    )


@pytest.mark.parametrize(
    "posted,body",
    [
        (
            {**GOOD, "default_capacity": "0"},
            {"mode": "round_robin", "default_capacity": 0, "reroute_after_seconds": 60, "show_queue_position": True},
        ),
        (
            {**GOOD, "default_capacity": "51", "reroute_after_seconds": "14"},
            {"mode": "round_robin", "default_capacity": 51, "reroute_after_seconds": 14, "show_queue_position": True},
        ),
        (
            {**GOOD, "reroute_after_seconds": "901"},
            {"mode": "round_robin", "default_capacity": 4, "reroute_after_seconds": 901, "show_queue_position": True},
        ),
        (
            {**GOOD, "default_capacity": "three", "reroute_after_seconds": "1.5"},
            {
                "mode": "round_robin",
                "default_capacity": "three",
                "reroute_after_seconds": "1.5",
                "show_queue_position": True,
            },
        ),
        (
            {**GOOD, "mode": "random"},
            {"mode": "random", "default_capacity": 4, "reroute_after_seconds": 60, "show_queue_position": True},
        ),
        (
            {"reroute_after_seconds": ""},
            {"reroute_after_seconds": None, "show_queue_position": False},
        ),
    ],
)
def test_a_refused_routing_shows_the_apis_words_and_changes_nothing(owner_console, api, widget, posted, body):
    response = owner_console.post(ROUTING, posted)
    answer = api().put("/api/v1/routing", body, format="json", **idem())
    assert response.status_code == answer.status_code == 422
    assert sorted(page_errors(response)) == sorted(api_messages(answer))
    assert not RoutingSettings.objects.filter(widget=widget).exists()
    assert not AuditEntry.objects.filter(action="routing.changed").exists()


# --- capacity per operator ----------------------------------------------------------------------------------


def capacity_cell(html: str, agent) -> str:
    return re.search(rf'<tr id="operator-{agent.pk}">(.*?)</tr>', html, re.S).group(1)


def test_each_operator_shows_the_default_capacity_when_empty(owner_console, owner, operator, widget):
    RoutingSettings.objects.create(widget=widget, default_capacity=5)
    operator.capacity = 7
    operator.save()
    html = owner_console.get(PEOPLE).content.decode()
    mine = capacity_cell(html, owner)
    assert 'name="capacity" value=""' in mine and "default: 5" in mine
    theirs = capacity_cell(html, operator)
    assert 'name="capacity" value="7"' in theirs


def test_setting_and_clearing_a_capacity_is_audited_with_the_owner_as_actor(owner_console, owner, operator):
    url = PEOPLE + f"operators/{operator.pk}/capacity/"
    response = owner_console.post(url, {"capacity": "6"})
    assert response.status_code == 303 and response.url == PEOPLE
    operator.refresh_from_db()
    assert operator.capacity == 6
    entry = AuditEntry.objects.filter(action="agent.changed", target_id=str(operator.pk)).latest("pk")
    assert (entry.actor_type, str(entry.actor_id)) == ("agent", str(owner.pk))
    assert "Olga takes at most 6 chats at once." in owner_console.get(PEOPLE).content.decode()
    assert owner_console.post(url, {"capacity": ""}).status_code == 303
    operator.refresh_from_db()
    assert operator.capacity is None
    assert "Olga takes the default number of chats." in owner_console.get(PEOPLE).content.decode()


@pytest.mark.parametrize("posted,value", [("0", 0), ("51", 51), ("2.5", "2.5"), ("many", "many")])
def test_a_refused_capacity_shows_the_apis_words_beside_the_operator(owner_console, operator, api, posted, value):
    operator.capacity = 2
    operator.save()
    response = owner_console.post(PEOPLE + f"operators/{operator.pk}/capacity/", {"capacity": posted})
    answer = api().patch(f"/api/v1/agents/{operator.pk}", {"capacity": value}, format="json", **idem())
    assert response.status_code == answer.status_code == 422
    assert page_errors(response) == api_messages(answer)
    cell = capacity_cell(response.content.decode(), operator)
    assert f'value="{posted}"' in cell and 'aria-invalid="true"' in cell
    operator.refresh_from_db()
    assert operator.capacity == 2


def test_another_widgets_operator_and_the_ai_operator_are_404(owner_console, other_widget, widget):
    stranger = HumanAgentFactory(widget=other_widget)
    robot = AIAgentFactory(widget=widget)
    for pk in (stranger.pk, robot.pk, 999999):
        assert owner_console.post(PEOPLE + f"operators/{pk}/capacity/", {"capacity": "5"}).status_code == 404
    assert Agent.objects.filter(pk__in=[stranger.pk, robot.pk], capacity__isnull=False).count() == 0


def test_an_operator_is_refused_both_pages(console, operator):
    assert console.get(ROUTING).status_code == 403
    assert console.post(ROUTING, GOOD).status_code == 403
    assert console.post(PEOPLE + f"operators/{operator.pk}/capacity/", {"capacity": "9"}).status_code == 403
    operator.refresh_from_db()
    assert operator.capacity is None
