"""The proactive messages' pages (/console/settings/widget/proactive/): the list with the last 30 days'
figures, create, edit, enable or disable, delete, over apps.proactive.services with the API's
serializers: the API's refusals in its words, audit rows with the owner as actor, another widget's ids
404."""

import itertools
from html import unescape

import pytest
from django.utils import timezone

from apps.audit.models import AuditEntry
from apps.chats.tests.factories import AgentFactory
from apps.core.timeparse import business_tz
from apps.proactive import services
from apps.proactive.models import ProactiveCount, ProactiveMessage

pytestmark = pytest.mark.django_db

LIST = "/console/settings/widget/proactive/"
NEW = f"{LIST}new/"
API = "/api/v1/proactive-messages"
_keys = itertools.count()


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"proactive-page-{next(_keys)}"}


def form(**overrides) -> dict:
    values = {
        "name": "Pricing help",
        "enabled": "on",
        "agent": "",
        "text_en": "Questions about plans?",
        "url_patterns": "https://shop.example/pricing*\n*/checkout",
        "time_on_page_seconds": "20",
        "visits_at_least": "2",
        "attributes": "plan=free\ntrial=true\nseats=3",
        "frequency": "once_per_session",
        "priority": "5",
    }
    values.update(overrides)
    return {k: v for k, v in values.items() if v is not None}


def text(response) -> str:
    return unescape(response.content.decode())


def message(widget, **kwargs) -> ProactiveMessage:
    return services.create_message(widget=widget, data={"name": "M", "text_i18n": {"en": "Hi"}, **kwargs})


def audited(owner, action: str) -> AuditEntry:
    entry = AuditEntry.objects.get(action=action)
    assert (entry.actor_type, entry.actor_id) == ("agent", str(owner.pk))
    return entry


def api_messages(problem: dict) -> list[str]:
    errors = problem.get("errors") or {}
    return [m for messages in errors.values() for m in messages] or [problem["detail"]]


# --- pages --------------------------------------------------------------------------------------------


def test_the_list_shows_each_message_with_its_figures(owner_console, widget, other_widget):
    row = message(widget, name="Welcome back", priority=3)
    message(other_widget, name="Foreign offer")
    day = timezone.now().astimezone(business_tz()).date()
    ProactiveCount.objects.create(widget=widget, message=row, day=day, shown=41, opened=17, replied=9)
    page = text(owner_console.get(LIST))
    assert "Welcome back" in page and "Foreign offer" not in page
    assert all(f">{n}<" in page for n in (41, 17, 9))


def test_each_page_renders_for_the_owner(owner_console, widget):
    row = message(widget)
    for url in (LIST, NEW, f"{LIST}{row.pk}/", f"{LIST}{row.pk}/delete/"):
        assert owner_console.get(url).status_code == 200, url
    assert LIST in text(owner_console.get("/console/settings/widget/"))  # the builder links here


def test_an_operator_gets_403(console, widget):
    row = message(widget)
    for url in (LIST, NEW, f"{LIST}{row.pk}/"):
        assert console.get(url).status_code == 403
    assert console.post(f"{LIST}{row.pk}/enabled/").status_code == 403


# --- writes -------------------------------------------------------------------------------------------


def test_create_writes_through_the_service_and_is_audited(owner_console, owner, widget):
    agent = AgentFactory(widget=widget, name="Olga")
    response = owner_console.post(NEW, form(agent=str(agent.pk), text_de="Fragen zu den Tarifen?"))
    assert response.status_code == 303 and response["Location"] == LIST
    row = ProactiveMessage.objects.get(widget=widget)
    assert row.text_i18n == {"en": "Questions about plans?", "de": "Fragen zu den Tarifen?"}
    assert row.agent_id == agent.pk and row.frequency == "once_per_session" and row.priority == 5
    assert row.rules == {
        "url_patterns": ["https://shop.example/pricing*", "*/checkout"],
        "time_on_page_seconds": 20,
        "visits_at_least": 2,
        "attributes": {"plan": "free", "trial": True, "seats": 3},
        "only_when_open": False,
    }
    audited(owner, "proactive_message.created")


def test_edit_changes_it_and_the_page_shows_the_stored_values(owner_console, owner, widget):
    row = message(widget, name="Old")
    page = text(owner_console.get(f"{LIST}{row.pk}/"))
    assert 'value="Old"' in page
    response = owner_console.post(f"{LIST}{row.pk}/", form(name="New", enabled=None, only_when_open="on"))
    assert response.status_code == 303
    row.refresh_from_db()
    assert row.name == "New" and row.enabled is False and row.rules["only_when_open"] is True
    audited(owner, "proactive_message.changed")


def test_enable_and_disable(owner_console, widget):
    row = message(widget)
    assert owner_console.post(f"{LIST}{row.pk}/enabled/", {}).status_code == 303
    row.refresh_from_db()
    assert row.enabled is False
    owner_console.post(f"{LIST}{row.pk}/enabled/", {"enabled": "on"})
    row.refresh_from_db()
    assert row.enabled is True


def test_delete_after_confirmation(owner_console, owner, widget):
    row = message(widget)
    assert owner_console.post(f"{LIST}{row.pk}/delete/").status_code == 303
    assert not ProactiveMessage.objects.filter(pk=row.pk).exists()
    audited(owner, "proactive_message.deleted")


def test_another_widgets_ids_are_404_in_every_form(owner_console, other_widget):
    row = message(other_widget)
    for url in (f"{LIST}{row.pk}/", f"{LIST}{row.pk}/delete/"):
        assert owner_console.get(url).status_code == 404
        assert owner_console.post(url, form()).status_code == 404
    assert owner_console.post(f"{LIST}{row.pk}/enabled/").status_code == 404
    row.refresh_from_db()
    assert row.enabled is True and row.name == "M"


# --- refusals in the API's words ------------------------------------------------------------------------


def _api_problem(api, body: dict) -> dict:
    response = api(scopes=["campaigns:write"]).post(API, body, format="json", **idem())
    assert response.status_code in (409, 422), response.content
    return response.json()


@pytest.mark.parametrize(
    ("posted", "api_body"),
    [
        ({"name": ""}, {"name": "", "text_i18n": {"en": "x"}}),
        ({"text_en": ""}, {"name": "n", "text_i18n": {}}),
        ({"priority": "big"}, {"name": "n", "text_i18n": {"en": "x"}, "priority": "big"}),
        (
            {"time_on_page_seconds": "-5"},
            {"name": "n", "text_i18n": {"en": "x"}, "rules": {"time_on_page_seconds": -5}},
        ),
        ({"attributes": "Bad Key=1"}, {"name": "n", "text_i18n": {"en": "x"}, "rules": {"attributes": {"Bad Key": 1}}}),
    ],
)
def test_a_bad_input_shows_the_apis_messages_and_changes_nothing(owner_console, api, widget, posted, api_body):
    response = owner_console.post(NEW, form(**posted))
    assert response.status_code == 422
    page = text(response)
    for expected in api_messages(_api_problem(api, api_body)):
        assert expected in page, expected
    assert not ProactiveMessage.objects.filter(widget=widget).exists()


def test_a_taken_name_is_409_with_the_apis_detail(owner_console, api, widget):
    message(widget, name="Pricing help")
    response = owner_console.post(NEW, form())
    assert response.status_code == 409
    problem = _api_problem(api, {"name": "Pricing help", "text_i18n": {"en": "x"}})
    assert problem["code"] == "name_taken" and problem["detail"] in text(response)
    assert ProactiveMessage.objects.filter(widget=widget).count() == 1


def test_a_foreign_agent_is_refused_like_the_api(owner_console, api, widget, other_widget):
    foreign = AgentFactory(widget=other_widget)
    response = owner_console.post(NEW, form(agent=str(foreign.pk)))
    assert response.status_code == 422
    problem = _api_problem(api, {"name": "n", "text_i18n": {"en": "x"}, "agent_id": foreign.pk})
    assert problem["errors"]["agent_id"][0] in text(response)
    assert not ProactiveMessage.objects.filter(widget=widget).exists()
