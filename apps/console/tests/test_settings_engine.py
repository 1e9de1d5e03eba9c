"""The Macros area (/console/settings/macros/): list, create, edit, delete over apps.macros.services
with the API's MacroInput: the API's refusals in its words, audit rows with the owner as actor, actions
edited as rows, another widget's and another operator's macros 404."""

import itertools
from html import unescape

import pytest

from apps.agents.models import Department
from apps.audit.models import AuditEntry
from apps.chats import services as chat_services
from apps.macros import services as macro_services
from apps.macros.models import Macro
from tests.support.factories import AgentFactory
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

LIST = "/console/settings/macros/"
NEW = "/console/settings/macros/new/"
API = "/api/v1/macros"
_keys = itertools.count()


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"macros-{next(_keys)}"}


def text(response) -> str:
    return unescape(response.content.decode())


def macro(widget, name="Refund", **kwargs) -> Macro:
    return macro_services.create_macro(widget=widget, name=name, actions=[{"type": "close"}], **kwargs)


def test_the_pages_render_for_the_owner(owner_console, widget):
    row = macro(widget)
    assert "Refund" in text(owner_console.get(LIST))
    assert 'name="actions-0-type"' in text(owner_console.get(NEW))
    assert 'value="close" selected' in text(owner_console.get(f"{LIST}{row.pk}/"))
    assert owner_console.get(f"{LIST}{row.pk}/delete/").status_code == 200


def test_an_operator_is_refused(console, widget):
    assert console.get(LIST).status_code == 403


def test_create_from_rows_writes_through_the_service_with_an_audit_row(owner_console, owner, widget):
    chat_services.create_label(widget=widget, name="Refund")
    department = Department.objects.create(widget=widget, name="Billing")
    colleague = AgentFactory(widget=widget)
    post = {
        "name": "Refund request",
        "visibility": "all",
        "actions-0-type": "send_message",
        "actions-0-text": "Hi {{contact.name|there}}",
        "actions-1-type": "add_labels",
        "actions-1-labels": ["Refund"],
        "actions-2-type": "",  # an empty row is left out
        "actions-3-type": "assign_department",
        "actions-3-department_id": str(department.pk),
        "actions-4-type": "assign_agent",
        "actions-4-agent_id": str(colleague.pk),
        "actions-5-type": "close",
        "actions-5-text": "ignored: close takes nothing",
    }
    response = owner_console.post(NEW, post)
    assert response.status_code == 303, text(response)[:3000]
    row = Macro.objects.get(widget=widget)
    assert (row.name, row.visibility, row.agent_id) == ("Refund request", "all", None)
    assert row.actions == [
        {"type": "send_message", "text": "Hi {{contact.name|there}}"},
        {"type": "add_labels", "labels": ["Refund"]},
        {"type": "assign_department", "department_id": department.pk},
        {"type": "assign_agent", "agent_id": colleague.pk},
        {"type": "close"},
    ]
    entry = AuditEntry.objects.get(action="macro.created")
    assert (entry.actor_type, str(entry.actor_id)) == ("agent", str(owner.pk))


def test_only_me_makes_a_personal_macro_of_the_owner(owner_console, owner, widget):
    assert (
        owner_console.post(NEW, {"name": "Mine", "visibility": "personal", "actions-0-type": "close"}).status_code
        == 303
    )
    assert Macro.objects.get(widget=widget).agent_id == owner.pk


def test_the_owner_does_not_see_an_operators_personal_macros(owner_console, widget):
    theirs = macro(widget, "Operator's own", visibility="personal", agent=AgentFactory(widget=widget))
    assert "Operator's own" not in text(owner_console.get(LIST))
    assert owner_console.get(f"{LIST}{theirs.pk}/").status_code == 404
    assert owner_console.post(f"{LIST}{theirs.pk}/delete/").status_code == 404
    assert Macro.objects.filter(pk=theirs.pk).exists()


def test_another_widgets_macro_is_404(owner_console, other_widget):
    foreign = macro(other_widget)
    assert owner_console.get(f"{LIST}{foreign.pk}/").status_code == 404
    assert owner_console.post(f"{LIST}{foreign.pk}/", {"name": "x", "visibility": "all"}).status_code == 404
    assert owner_console.post(f"{LIST}{foreign.pk}/delete/").status_code == 404


@pytest.mark.parametrize(
    ("post", "api_body"),
    [
        (
            {"name": "x", "visibility": "all", "actions-0-type": "send_message", "actions-0-text": "Hi {{nope}}"},
            {"name": "x", "visibility": "all", "actions": [{"type": "send_message", "text": "Hi {{nope}}"}]},
        ),
        (
            {"name": "x", "visibility": "all", "actions-0-type": "add_note", "actions-0-text": "  "},
            {"name": "x", "visibility": "all", "actions": [{"type": "add_note", "text": "  "}]},
        ),
        (
            {"name": "x", "visibility": "all", "actions-0-type": "assign_agent", "actions-0-agent_id": "999999"},
            {"name": "x", "visibility": "all", "actions": [{"type": "assign_agent", "agent_id": 999999}]},
        ),
        (
            {"name": "x", "visibility": "all"},
            {"name": "x", "visibility": "all", "actions": []},
        ),
        (
            {"name": "", "visibility": "all", "actions-0-type": "close"},
            {"name": "", "visibility": "all", "actions": [{"type": "close"}]},
        ),
    ],
)
def test_a_refused_macro_shows_the_apis_messages_and_changes_nothing(owner_console, api, widget, post, api_body):
    problem = assert_problem(api().post(API, api_body, format="json", **idem()), 422)
    response = owner_console.post(NEW, post)
    assert response.status_code == 422
    for messages in problem["errors"].values():
        for message in messages:
            assert message in text(response)
    assert not Macro.objects.filter(widget=widget).exists()
    assert not AuditEntry.objects.filter(action__startswith="macro.").exists()


def test_another_widgets_ids_are_refused_like_missing_ones(owner_console, widget, other_widget):
    foreign = Department.objects.create(widget=other_widget, name="Theirs")
    post = {
        "name": "x",
        "visibility": "all",
        "actions-0-type": "assign_department",
        "actions-0-department_id": str(foreign.pk),
    }
    response = owner_console.post(NEW, post)
    assert response.status_code == 422 and "Unknown id." in text(response)
    assert not Macro.objects.exists()


def test_edit_and_delete(owner_console, widget):
    row = macro(widget)
    post = {"name": "Renamed", "visibility": "all", "actions-0-type": "add_note", "actions-0-text": "Checked"}
    assert owner_console.post(f"{LIST}{row.pk}/", post).status_code == 303
    row.refresh_from_db()
    assert (row.name, row.actions) == ("Renamed", [{"type": "add_note", "text": "Checked"}])
    assert owner_console.post(f"{LIST}{row.pk}/delete/").status_code == 303
    assert not Macro.objects.exists()
    actions = set(AuditEntry.objects.filter(target_type="macro").values_list("action", flat=True))
    assert actions == {"macro.created", "macro.changed", "macro.deleted"}
