"""The owner's People pages: operators, invitations and departments over the API's serializers and
services (the same refusals with the same words), audited with the owner as the actor; another
widget's ids are 404 in every form."""

import itertools
import re

import pytest
from django.core import mail

from apps.agents.models import Agent, Department, Invitation
from apps.agents.tests.factories import AIAgentFactory, DepartmentFactory, HumanAgentFactory, InvitationFactory
from apps.audit.models import AuditEntry

pytestmark = pytest.mark.django_db

PEOPLE = "/console/settings/people/"
_keys = itertools.count()


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"people-page-{next(_keys)}"}


def page_errors(response) -> list[str]:
    html = response.content.decode()
    return [re.sub(r"<[^>]+>", "", m).strip() for m in re.findall(r'<p class="error">(.*?)</p>', html)] + [
        re.sub(r"<[^>]+>", "", m).strip()
        for m in re.findall(r'<div class="refusal" role="alert">(.*?)</div>', html, re.S)
    ]


def api_messages(response) -> list[str]:
    body = response.json()
    return [message for messages in body.get("errors", {}).values() for message in messages] or [body["detail"]]


def html_text(message: str) -> str:
    return message.replace("'", "&#x27;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


# --- the page -------------------------------------------------------------------------------------------


def test_the_owner_sees_operators_invitations_and_departments(owner_console, owner, operator, widget, monkeypatch):
    from apps.agents import selectors

    monkeypatch.setattr(selectors, "PRESENCE_SOURCE", lambda w: {operator.pk})
    department = DepartmentFactory(widget=widget, name="Sales")
    department.agents.set([operator])
    InvitationFactory(widget=widget, email="new@example.com")
    AIAgentFactory(widget=widget, name="Robo")
    response = owner_console.get(PEOPLE)
    assert response.status_code == 200
    html = response.content.decode()
    assert "olga@example.com" in html and "oscar@example.com" in html
    assert "new@example.com" in html and "Sales" in html
    assert "Robo" not in html  # the AI operator belongs to the AI area
    row = re.search(rf'<tr id="operator-{operator.pk}">(.*?)</tr>', html, re.S).group(1)
    assert "online now" in row and "Sales" in row and "Operator" in row
    own = re.search(rf'<tr id="operator-{owner.pk}">(.*?)</tr>', html, re.S).group(1)
    assert "offline" in own and "Suspend" not in own and "Delete" not in own


def test_the_menu_names_the_people_area(owner_console):
    html = owner_console.get("/console/settings/").content.decode()
    assert f'href="{PEOPLE}"' in html


# --- invitations --------------------------------------------------------------------------------------------


def test_inviting_mails_a_link_and_lists_the_invitation(owner_console, owner, widget):
    response = owner_console.post(PEOPLE + "invite/", {"email": "New.Person@Example.com"})
    assert response.status_code == 303 and response.url == PEOPLE
    invitation = Invitation.objects.get(widget=widget)
    assert invitation.email == "new.person@example.com"
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["new.person@example.com"]
    assert re.search(r"http://testserver/invite/[A-Za-z0-9_-]+", mail.outbox[0].body)
    page = owner_console.get(PEOPLE).content.decode()
    assert "new.person@example.com" in page and "Invitation sent" in page


@pytest.mark.parametrize("email", ["not-an-address", "root@localhost", "olga@example.com", ""])
def test_a_refused_invitation_shows_the_apis_words_and_sends_nothing(owner_console, operator, api, email):
    response = owner_console.post(PEOPLE + "invite/", {"email": email})
    answer = api().post("/api/v1/agents/invitations", {"email": email}, format="json", **idem())
    assert answer.status_code == response.status_code == 422
    assert page_errors(response) == api_messages(answer)
    assert not Invitation.objects.exists() and not mail.outbox


def test_no_free_seat_refuses_the_invitation_like_the_api(owner_console, owner, widget, api):
    widget.account.seats = 1
    widget.account.save()
    response = owner_console.post(PEOPLE + "invite/", {"email": "a@example.com"})
    answer = api().post("/api/v1/agents/invitations", {"email": "a@example.com"}, format="json", **idem())
    assert response.status_code == answer.status_code == 409
    assert page_errors(response) == [html_text(answer.json()["detail"])]
    assert not Invitation.objects.exists()


def test_revoking_an_invitation_ends_it(owner_console, widget):
    invitation = InvitationFactory(widget=widget)
    response = owner_console.post(PEOPLE + f"invitations/{invitation.pk}/revoke/")
    assert response.status_code == 303
    invitation.refresh_from_db()
    assert invitation.state() == "revoked"
    assert invitation.email not in owner_console.get(PEOPLE).content.decode().split("invite-title")[1]


def test_another_widgets_invitation_is_404(owner_console, other_widget):
    invitation = InvitationFactory(widget=other_widget)
    assert owner_console.post(PEOPLE + f"invitations/{invitation.pk}/revoke/").status_code == 404
    invitation.refresh_from_db()
    assert invitation.state() == "pending"


# --- operators ----------------------------------------------------------------------------------------------


def test_suspending_asks_first_then_bans_and_is_audited_by_the_owner(owner_console, owner, operator):
    url = PEOPLE + f"operators/{operator.pk}/suspend/"
    confirm = owner_console.get(url)
    assert confirm.status_code == 200 and "Suspend Olga?" in confirm.content.decode()
    operator.refresh_from_db()
    assert operator.status == "active"
    assert owner_console.post(url).status_code == 303
    operator.refresh_from_db()
    assert operator.status == "banned"


def test_restoring_and_deleting(owner_console, operator):
    owner_console.post(PEOPLE + f"operators/{operator.pk}/suspend/")
    assert owner_console.post(PEOPLE + f"operators/{operator.pk}/restore/").status_code == 303
    operator.refresh_from_db()
    assert operator.status == "active"
    assert owner_console.post(PEOPLE + f"operators/{operator.pk}/delete/").status_code == 303
    operator.refresh_from_db()
    assert operator.status == "banned"


def test_restoring_without_a_free_seat_is_the_apis_refusal(owner_console, owner, widget, api):
    banned = HumanAgentFactory(widget=widget, status=Agent.Status.BANNED)
    widget.account.seats = 1
    widget.account.save()
    response = owner_console.post(PEOPLE + f"operators/{banned.pk}/restore/")
    answer = api().post(f"/api/v1/agents/{banned.pk}/restore", format="json", **idem())
    assert response.status_code == answer.status_code == 409
    assert page_errors(response) == [html_text(answer.json()["detail"])]
    banned.refresh_from_db()
    assert banned.status == "banned"


def test_the_widgets_own_owner_row_is_not_deletable_with_the_apis_words(owner_console, widget, api):
    first = HumanAgentFactory(widget=widget, role="owner", is_owner=True, name="Founder")
    response = owner_console.post(PEOPLE + f"operators/{first.pk}/delete/")
    answer = api().delete(f"/api/v1/agents/{first.pk}")
    assert response.status_code == answer.status_code == 409
    assert page_errors(response) == [html_text(answer.json()["detail"])]
    first.refresh_from_db()
    assert first.status == "active"


@pytest.mark.parametrize("action", ["suspend", "delete"])
def test_the_owner_cannot_suspend_or_delete_themselves(owner_console, owner, action):
    response = owner_console.post(PEOPLE + f"operators/{owner.pk}/{action}/")
    assert response.status_code == 409
    assert "You cannot suspend or delete yourself" in response.content.decode()
    owner.refresh_from_db()
    assert owner.status == "active"


def test_operators_of_another_widget_and_ai_operators_are_404(owner_console, other_widget, widget):
    stranger = HumanAgentFactory(widget=other_widget)
    robot = AIAgentFactory(widget=widget)
    for pk in (stranger.pk, robot.pk, 999999):
        for action in ("suspend", "restore", "delete"):
            assert owner_console.get(PEOPLE + f"operators/{pk}/{action}/").status_code == 404
            assert owner_console.post(PEOPLE + f"operators/{pk}/{action}/").status_code == 404
    stranger.refresh_from_db()
    assert stranger.status == "active"


def test_an_unknown_action_is_404(owner_console, operator):
    assert owner_console.post(PEOPLE + f"operators/{operator.pk}/promote/").status_code == 404


# --- departments --------------------------------------------------------------------------------------------


def test_creating_a_department_is_audited_with_the_owner_as_actor(owner_console, owner, widget):
    response = owner_console.post(PEOPLE + "departments/new/", {"name": "Sales", "channels": ["smb", "tg"]})
    department = Department.objects.get(widget=widget)
    assert response.status_code == 303 and response.url == PEOPLE + f"departments/{department.pk}/"
    assert (department.name, department.channels) == ("Sales", ["smb", "tg"])
    entry = AuditEntry.objects.get(target_type="department", target_id=str(department.pk))
    assert (entry.actor_type, str(entry.actor_id)) == ("agent", str(owner.pk))


@pytest.mark.parametrize(
    "data,body",
    [
        ({"name": ""}, {"name": ""}),
        ({"name": "x" * 201}, {"name": "x" * 201}),
        ({"name": "Bad\u202ename"}, {"name": "Bad\u202ename"}),
        ({"name": "Ok", "channels": ["zz"]}, {"name": "Ok", "channels": ["zz"]}),
        ({"name": "Ok", "channels": ["av__77"]}, {"name": "Ok", "channels": ["av__77"]}),
    ],
)
def test_a_refused_department_shows_the_apis_words(owner_console, owner, api, data, body):
    response = owner_console.post(PEOPLE + "departments/new/", data)
    answer = api().post("/api/v1/departments", body, format="json", **idem())
    assert response.status_code == answer.status_code == 422
    assert page_errors(response) == [html_text(m) for m in api_messages(answer)]
    assert not Department.objects.exists()


def test_renaming_and_changing_channels(owner_console, owner, widget):
    department = DepartmentFactory(widget=widget, name="Old", channels=["smb"])
    url = PEOPLE + f"departments/{department.pk}/"
    assert owner_console.get(url).status_code == 200
    assert owner_console.post(url, {"name": "New", "channels": ["tg", "wa"]}).status_code == 303
    department.refresh_from_db()
    assert (department.name, department.channels) == ("New", ["tg", "wa"])
    entry = AuditEntry.objects.filter(target_type="department").latest("pk")
    assert str(entry.actor_id) == str(owner.pk)


def test_a_refused_rename_shows_the_apis_words(owner_console, widget, api):
    department = DepartmentFactory(widget=widget, name="Old")
    response = owner_console.post(PEOPLE + f"departments/{department.pk}/", {"name": "  "})
    answer = api().patch(f"/api/v1/departments/{department.pk}", {"name": "  "}, format="json", **idem())
    assert response.status_code == answer.status_code == 422
    assert page_errors(response) == api_messages(answer)
    department.refresh_from_db()
    assert department.name == "Old"


def test_setting_members(owner_console, widget, operator, colleague):
    department = DepartmentFactory(widget=widget)
    url = PEOPLE + f"departments/{department.pk}/members/"
    assert owner_console.post(url, {"agent_ids": [operator.pk, colleague.pk]}).status_code == 303
    assert sorted(department.agents.values_list("pk", flat=True)) == sorted([operator.pk, colleague.pk])
    assert owner_console.post(url, {}).status_code == 303
    assert not department.agents.exists()


def test_a_foreign_member_is_refused_like_the_api(owner_console, widget, other_widget, operator, api):
    department = DepartmentFactory(widget=widget)
    stranger = HumanAgentFactory(widget=other_widget)
    response = owner_console.post(
        PEOPLE + f"departments/{department.pk}/members/", {"agent_ids": [operator.pk, stranger.pk]}
    )
    answer = api().put(
        f"/api/v1/departments/{department.pk}/agents",
        {"agent_ids": [operator.pk, stranger.pk]},
        format="json",
        **idem(),
    )
    assert response.status_code == answer.status_code == 422
    assert page_errors(response) == api_messages(answer)
    assert not department.agents.exists()


def test_setting_the_schedule(owner_console, widget):
    department = DepartmentFactory(widget=widget)
    week = {"Monday-mode": "hours", "Monday-from": "09:00", "Monday-to": "18:00", "Tuesday-mode": "full"}
    assert owner_console.post(PEOPLE + f"departments/{department.pk}/schedule/", week).status_code == 303
    department.refresh_from_db()
    assert department.schedule["Monday"] == {"from": "09:00", "to": "18:00"}
    assert department.schedule["Tuesday"] == "full" and department.schedule["Sunday"] is None


def test_a_refused_schedule_shows_the_apis_words(owner_console, widget, api):
    department = DepartmentFactory(widget=widget)
    before = dict(department.schedule)
    week = {"Monday-mode": "hours", "Monday-from": "18:00", "Monday-to": "09:00", "Friday-mode": "hours"}
    response = owner_console.post(PEOPLE + f"departments/{department.pk}/schedule/", week)
    body = {
        "schedule": {
            "Monday": {"from": "18:00", "to": "09:00"},
            "Friday": {"from": "", "to": ""},
        }
    }
    answer = api().put(f"/api/v1/departments/{department.pk}/schedule", body, format="json", **idem())
    assert response.status_code == answer.status_code == 422
    assert sorted(page_errors(response)) == sorted(html_text(m) for m in api_messages(answer))
    department.refresh_from_db()
    assert department.schedule == before


def test_deleting_a_department_asks_first(owner_console, owner, widget):
    department = DepartmentFactory(widget=widget, name="Gone")
    url = PEOPLE + f"departments/{department.pk}/delete/"
    assert "Delete the department Gone?" in owner_console.get(url).content.decode()
    assert Department.objects.filter(pk=department.pk).exists()
    assert owner_console.post(url).status_code == 303
    assert not Department.objects.filter(pk=department.pk).exists()
    entry = AuditEntry.objects.filter(target_type="department").latest("pk")
    assert str(entry.actor_id) == str(owner.pk)


def test_another_widgets_department_is_404_in_every_form(owner_console, other_widget):
    department = DepartmentFactory(widget=other_widget, name="Theirs")
    base = PEOPLE + f"departments/{department.pk}/"
    assert owner_console.get(base).status_code == 404
    assert owner_console.post(base, {"name": "Mine"}).status_code == 404
    assert owner_console.post(base + "members/", {}).status_code == 404
    assert owner_console.post(base + "schedule/", {"Monday-mode": "full"}).status_code == 404
    assert owner_console.get(base + "delete/").status_code == 404
    assert owner_console.post(base + "delete/").status_code == 404
    department.refresh_from_db()
    assert department.name == "Theirs"
