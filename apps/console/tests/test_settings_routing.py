"""The owner's routing pages: the routing settings (RoutingSettingsInput, put_settings), each
operator's capacity (AgentPatchInput, update_agent) and the SLA policies (SlaPolicyInput,
SlaPolicyPatchInput, apps.routing.sla) with the API's rules and words, audited with the owner as the
actor; another widget's ids are 404 and an operator gets 403."""

import itertools
import re
from html import unescape

import pytest

from apps.agents.models import Agent
from apps.agents.tests.factories import AIAgentFactory, DepartmentFactory, HumanAgentFactory
from apps.audit.models import AuditEntry
from apps.routing.models import RoutingSettings, SlaPolicy

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


# --- SLA policies -------------------------------------------------------------------------------------------

SLA = PEOPLE + "sla/"
POLICY = {
    "name": "Standard",
    "department_id": "",
    "first_response": "5",
    "first_response_unit": "minutes",
    "next_response": "",
    "next_response_unit": "minutes",
    "resolution": "1",
    "resolution_unit": "days",
    "business_hours_only": "on",
}


def sla_body(**overrides) -> dict:
    return {
        "name": "Standard",
        "department_id": None,
        "first_response_seconds": 300,
        "next_response_seconds": None,
        "resolution_seconds": 86400,
        "business_hours_only": True,
        **overrides,
    }


def test_the_sla_list_names_each_policy_with_its_targets(owner_console, widget):
    assert "No policy yet" in owner_console.get(SLA).content.decode()
    sales = DepartmentFactory(widget=widget, name="Sales")
    SlaPolicy.objects.create(widget=widget, name="Quick", department=sales, first_response_seconds=90)
    SlaPolicy.objects.create(widget=widget, name="Base", next_response_seconds=7200, resolution_seconds=172800)
    response = owner_console.get(SLA)
    assert response.status_code == 200
    page = response.content.decode()
    assert page.index("Base") < page.index("Quick")  # the default first
    assert "2 hours" in page and "2 days" in page and "90 seconds" in page and "Sales" in page
    assert 'aria-current="page">SLA policies</a>' in page
    assert f'href="{SLA}"' in owner_console.get(ROUTING).content.decode()


def test_creating_a_policy_converts_the_units_and_is_audited_with_the_owner(owner_console, owner, widget):
    assert owner_console.get(SLA + "new/").status_code == 200
    response = owner_console.post(SLA + "new/", {**POLICY, "next_response": "1.5", "next_response_unit": "hours"})
    assert response.status_code == 303 and response.url == SLA
    row = SlaPolicy.objects.get(widget=widget)
    assert (row.name, row.department_id, row.business_hours_only) == ("Standard", None, True)
    assert (row.first_response_seconds, row.next_response_seconds, row.resolution_seconds) == (300, 5400, 86400)
    assert_owner_audited(owner, "sla_policy.created")
    assert "SLA policy Standard created." in owner_console.get(SLA).content.decode()


@pytest.mark.parametrize(
    "posted,body",
    [
        ({"name": "  "}, {"name": "  "}),
        ({"first_response": "0"}, {"first_response_seconds": 0}),
        ({"first_response": "8", "first_response_unit": "days"}, {"first_response_seconds": 691200}),
        ({"resolution": "soon"}, {"resolution_seconds": "soon"}),
        ({"name": "", "next_response": "-1"}, {"name": "", "next_response_seconds": -60}),
    ],
)
def test_a_refused_policy_shows_the_apis_words_and_stores_nothing(owner_console, api, widget, posted, body):
    response = owner_console.post(SLA + "new/", {**POLICY, **posted})
    answer = api().post("/api/v1/sla-policies", sla_body(**body), format="json", **idem())
    assert response.status_code == answer.status_code == 422
    assert sorted(page_errors(response)) == sorted(api_messages(answer))
    assert not SlaPolicy.objects.exists()


def test_a_foreign_department_is_refused_like_the_api(owner_console, api, other_widget):
    theirs = DepartmentFactory(widget=other_widget)
    response = owner_console.post(SLA + "new/", {**POLICY, "department_id": str(theirs.pk)})
    answer = api().post("/api/v1/sla-policies", sla_body(department_id=theirs.pk), format="json", **idem())
    assert response.status_code == answer.status_code == 422
    assert page_errors(response) == api_messages(answer)
    assert not SlaPolicy.objects.exists()


def test_a_second_default_or_department_policy_is_the_apis_conflict(owner_console, api, widget):
    sales = DepartmentFactory(widget=widget, name="Sales")
    SlaPolicy.objects.create(widget=widget, name="Base")
    SlaPolicy.objects.create(widget=widget, name="Sales SLA", department=sales)
    for department, code in (("", "sla_default_exists"), (str(sales.pk), "sla_department_taken")):
        response = owner_console.post(SLA + "new/", {**POLICY, "department_id": department})
        body = sla_body(department_id=int(department) if department else None)
        answer = api().post("/api/v1/sla-policies", body, format="json", **idem())
        assert response.status_code == answer.status_code == 409 and answer.json()["code"] == code
        assert page_errors(response) == [answer.json()["detail"]]
    assert SlaPolicy.objects.count() == 2


def test_editing_a_policy_shows_its_units_and_saves_with_the_owner_as_actor(owner_console, owner, widget):
    sales = DepartmentFactory(widget=widget, name="Sales")
    row = SlaPolicy.objects.create(widget=widget, name="Base", first_response_seconds=7200, resolution_seconds=90)
    url = SLA + f"{row.pk}/"
    page = owner_console.get(url).content.decode()
    assert 'name="first_response" value="2"' in page
    assert re.search(r'<option value="hours" selected>', page)
    assert 'name="resolution" value="1.5"' in page
    posted = {**POLICY, "name": "Sales first", "department_id": str(sales.pk), "business_hours_only": ""}
    assert owner_console.post(url, posted).status_code == 303
    row.refresh_from_db()
    assert (row.name, row.department_id, row.first_response_seconds, row.business_hours_only) == (
        "Sales first",
        sales.pk,
        300,
        False,
    )
    assert_owner_audited(owner, "sla_policy.changed")


def test_a_refused_edit_is_the_apis_conflict_and_changes_nothing(owner_console, api, widget):
    SlaPolicy.objects.create(widget=widget, name="Base")
    sales = DepartmentFactory(widget=widget)
    row = SlaPolicy.objects.create(widget=widget, name="Sales SLA", department=sales)
    response = owner_console.post(SLA + f"{row.pk}/", {**POLICY, "department_id": ""})
    answer = api().patch(f"/api/v1/sla-policies/{row.pk}", sla_body(), format="json", **idem())
    assert response.status_code == answer.status_code == 409
    assert page_errors(response) == [answer.json()["detail"]]
    row.refresh_from_db()
    assert (row.name, row.department_id) == ("Sales SLA", sales.pk)


def test_deleting_a_policy_asks_first(owner_console, owner, widget):
    row = SlaPolicy.objects.create(widget=widget, name="Gone")
    url = SLA + f"{row.pk}/delete/"
    assert "Delete the SLA policy Gone?" in owner_console.get(url).content.decode()
    assert SlaPolicy.objects.filter(pk=row.pk).exists()
    response = owner_console.post(url)
    assert response.status_code == 303 and response.url == SLA
    assert not SlaPolicy.objects.filter(pk=row.pk).exists()
    assert_owner_audited(owner, "sla_policy.deleted")


def test_another_widgets_policy_is_404_in_every_form(owner_console, other_widget):
    row = SlaPolicy.objects.create(widget=other_widget, name="Theirs")
    for path in (f"{row.pk}/", f"{row.pk}/delete/", "999999/"):
        assert owner_console.get(SLA + path).status_code == 404
        assert owner_console.post(SLA + path, POLICY).status_code == 404
    row.refresh_from_db()
    assert row.name == "Theirs"
    assert "Theirs" not in owner_console.get(SLA).content.decode()


def test_an_operator_is_refused_the_sla_pages(console, widget):
    row = SlaPolicy.objects.create(widget=widget, name="Base")
    for path in ("", "new/", f"{row.pk}/", f"{row.pk}/delete/"):
        assert console.get(SLA + path).status_code == 403
        assert console.post(SLA + path, POLICY).status_code == 403
    assert SlaPolicy.objects.get().name == "Base"
