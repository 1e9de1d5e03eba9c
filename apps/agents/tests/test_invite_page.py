"""The public invitation page /invite/<token>: a Django form with CSRF, in the console's languages
(English unless the browser asks for another) and look."""

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client
from django.utils import timezone

from apps.agents.events_log import slug_of
from apps.agents.models import Agent, AgentEvent, Invitation
from apps.agents.tests.conftest import idem
from apps.agents.tests.factories import HumanAgentFactory, InvitationFactory
from apps.console import invite as invitations
from tests.support.factories import UserFactory

pytestmark = pytest.mark.django_db

PASSWORD = "a-Long-unusual-passphrase-42"


def page(invitation_or_token) -> str:
    token = invitation_or_token if isinstance(invitation_or_token, str) else invitation_or_token.token
    return f"/invite/{token}"


def new_invitation(widget, **kwargs):
    token = f"tok{InvitationFactory._meta.model.objects.count()}-" + "x" * 40
    invitation = InvitationFactory(widget=widget, token=token, **kwargs)
    invitation.token = token
    return invitation


def csrf_client() -> Client:
    return Client(enforce_csrf_checks=True)


def submit(client, url, data):
    """GET the form (sets the CSRF cookie), then POST it with the token."""
    form = client.get(url)
    assert form.status_code == 200, form.content[:300]
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', form.content).group(1).decode()
    return client.post(url, {**data, "csrfmiddlewaretoken": token})


def new_operator(name="Анна", surname="Иванова", password=PASSWORD, password2=None):
    return {"name": name, "surname": surname, "password1": password, "password2": password2 or password}


def test_the_form_asks_for_name_and_password(widget):
    invitation = new_invitation(widget)
    response = csrf_client().get(page(invitation))
    assert response.status_code == 200
    html = response.content.decode()
    assert invitation.email in html and widget.name in html
    for field in ("name", "surname", "password1", "password2", "csrfmiddlewaretoken"):
        assert f'name="{field}"' in html
    assert response["Cache-Control"].startswith("no-store") or "no-store" in response["Cache-Control"]
    # the token never leaves in a Referer, and the form's POST still carries a real Origin
    assert response["Referrer-Policy"] == "strict-origin"


def test_accepting_makes_a_human_operator_who_can_log_in(widget, purges):
    invitation = new_invitation(widget, email="anna@example.com")
    client = csrf_client()
    response = submit(client, page(invitation), new_operator())
    assert response.status_code == 200
    assert "Invitation accepted" in response.content.decode()
    agent = Agent.objects.get(widget=widget, email="anna@example.com")
    assert (agent.type, agent.role, agent.status, agent.is_owner) == ("human", "operator", "active", False)
    assert (agent.name, agent.surname) == ("Анна", "Иванова")
    assert Client().login(username="anna@example.com", password=PASSWORD)
    invitation.refresh_from_db()
    assert invitation.accepted_at is not None and invitation.agent_id == agent.pk
    assert [slug_of(e.type_code) for e in AgentEvent.objects.filter(agent=agent)] == ["invitation_accepted"]
    assert widget.pk in purges


def test_the_new_operator_appears_in_the_agents_api(api, widget):
    invitation = new_invitation(widget, email="anna@example.com")
    submit(csrf_client(), page(invitation), new_operator())
    emails = [a["email"] for a in api().get("/api/v1/agents").json()["data"]]
    assert emails == ["anna@example.com"]


def test_full_flow_from_the_api_through_the_mailed_link(api, widget):
    assert (
        api().post("/api/v1/agents/invitations", {"email": "flow@example.com"}, format="json", **idem()).status_code
        == 201
    )
    link = re.search(r"http://testserver(/invite/[A-Za-z0-9_-]+)", mail.outbox[0].body).group(1)
    assert submit(csrf_client(), link, new_operator()).status_code == 200
    assert Agent.objects.filter(widget=widget, email="flow@example.com", status="active").exists()
    statuses = [i["status"] for i in api().get("/api/v1/agents/invitations").json()["data"]]
    assert statuses == ["accepted"]


def test_post_without_csrf_token_is_refused(widget):
    invitation = new_invitation(widget)
    response = csrf_client().post(page(invitation), new_operator())
    assert response.status_code == 403
    assert not Agent.objects.exists()


def test_mismatched_passwords_show_the_form_again(widget):
    invitation = new_invitation(widget)
    response = submit(csrf_client(), page(invitation), new_operator(password2="something-else-entirely-9"))
    assert response.status_code == 200 and "The passwords do not match" in response.content.decode()
    assert not Agent.objects.exists()
    invitation.refresh_from_db()
    assert invitation.accepted_at is None


def test_weak_passwords_are_refused(widget):
    invitation = new_invitation(widget)
    response = submit(csrf_client(), page(invitation), new_operator(password="12345678"))
    assert response.status_code == 200 and 'name="password1"' in response.content.decode()
    assert not Agent.objects.exists()


def test_name_is_required(widget):
    response = submit(csrf_client(), page(new_invitation(widget)), new_operator(name=""))
    assert response.status_code == 200
    assert not Agent.objects.exists()


def test_a_used_link_says_so(widget):
    invitation = new_invitation(widget)
    client = csrf_client()
    submit(client, page(invitation), new_operator())
    response = client.get(page(invitation))
    assert response.status_code == 410
    assert "already been used" in response.content.decode()
    assert Agent.objects.count() == 1


def test_an_expired_link_says_so(widget):
    invitation = new_invitation(widget, expires_at=timezone.now() - timedelta(seconds=1))
    response = csrf_client().get(page(invitation))
    assert response.status_code == 410 and "has expired" in response.content.decode()


def test_a_revoked_link_says_so(api, widget):
    invitation = new_invitation(widget)
    api().delete(f"/api/v1/agents/invitations/{invitation.pk}")
    response = csrf_client().get(page(invitation))
    assert response.status_code == 410 and "was revoked" in response.content.decode()


def test_a_link_revoked_while_the_form_was_open_is_refused(widget):
    invitation = new_invitation(widget)
    client = csrf_client()
    form = client.get(page(invitation))
    Invitation.objects.filter(pk=invitation.pk).update(revoked_at=timezone.now())
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', form.content).group(1).decode()
    response = client.post(page(invitation), {**new_operator(), "csrfmiddlewaretoken": token})
    assert response.status_code == 410 and not Agent.objects.exists()


def test_an_unknown_token_is_404_with_a_message(db):
    response = csrf_client().get("/invite/nonexistent-token-value")
    assert response.status_code == 404 and "does not work" in response.content.decode()


def test_an_existing_account_confirms_with_its_own_password_and_keeps_it(widget):
    user = UserFactory(username="known@example.com", email="known@example.com")
    user.set_password("the-original-passphrase-77")
    user.save()
    invitation = new_invitation(widget, email="known@example.com")
    client = csrf_client()
    html = client.get(page(invitation)).content.decode()
    assert 'name="password"' in html and 'name="password1"' not in html
    wrong = submit(client, page(invitation), {"name": "K", "password": "guess"})
    assert wrong.status_code == 200 and not Agent.objects.exists()
    right = submit(client, page(invitation), {"name": "K", "password": "the-original-passphrase-77"})
    assert right.status_code == 200
    agent = Agent.objects.get(widget=widget)
    assert agent.user_id == user.pk
    user.refresh_from_db()
    assert user.check_password("the-original-passphrase-77")


def test_password_guesses_of_an_existing_account_are_limited_per_invitation(widget):
    # given an invitation to an e-mail whose account has a password (the page checks it)
    user = UserFactory(username="known@example.com", email="known@example.com")
    user.set_password("the-original-passphrase-77")
    user.save()
    invitation = new_invitation(widget, email="known@example.com")
    # when whoever holds the link spends the page's allowance of guesses, from any client
    for n in range(invitations.CONFIRM_ATTEMPTS.limit):
        guess = submit(csrf_client(), page(invitation), {"name": "K", "password": f"guess-{n}"})
        assert guess.status_code == 200 and "Wrong password" in guess.content.decode()
    # then the next one is refused before the password is looked at, the right one included
    response = submit(csrf_client(), page(invitation), {"name": "K", "password": "the-original-passphrase-77"})
    assert response.status_code == 429 and int(response["Retry-After"]) > 0
    assert "Too many password attempts" in response.content.decode()
    assert not Agent.objects.exists()


@pytest.mark.parametrize("lookalike", ["alice@gmaıl.com", "alıce@gmail.com", "alice@ſupport.example"])
def test_an_invitation_to_a_lookalike_address_never_reaches_the_account_it_folds_onto(
    api, widget, other_widget, lookalike
):
    # given an operator of another widget whose console password is still to be set (create_agent
    # without --password), and an address that PostgreSQL's case folding maps onto theirs
    victim = HumanAgentFactory(widget=other_widget, email=lookalike.replace("ı", "i").replace("ſ", "s"))
    get_user_model().objects.filter(pk=victim.user_id).update(password="!")
    # when a tenant invites the lookalike (a domain or mailbox they hold) and follows the mailed link
    response = api().post("/api/v1/agents/invitations", {"email": lookalike}, format="json", **idem())
    assert response.status_code == 201
    link = re.search(r"http://testserver(/invite/[A-Za-z0-9_-]+)", mail.outbox[-1].body).group(1)
    assert 'name="password1"' in csrf_client().get(link).content.decode()
    assert submit(csrf_client(), link, new_operator()).status_code == 200
    # then the victim's account is untouched: no password, no seat in the tenant's widget
    victim.user.refresh_from_db()
    assert not victim.user.has_usable_password()
    agent = Agent.objects.get(widget=widget, email=lookalike)
    assert agent.user_id != victim.user_id and agent.user.email == lookalike


def test_an_address_longer_than_a_username_becomes_an_operator(api, widget):
    email = "a" * 64 + "@" + "b" * 63 + "." + "c" * 63 + ".com"
    assert api().post("/api/v1/agents/invitations", {"email": email}, format="json", **idem()).status_code == 201
    link = re.search(r"http://testserver(/invite/[A-Za-z0-9_-]+)", mail.outbox[-1].body).group(1)
    assert submit(csrf_client(), link, new_operator()).status_code == 200
    agent = Agent.objects.get(widget=widget, email=email)
    assert agent.user.email == email and agent.user.check_password(PASSWORD)


def test_a_new_operators_form_spends_no_password_guesses(widget):
    invitation = new_invitation(widget)
    for _ in range(invitations.CONFIRM_ATTEMPTS.limit + 1):
        assert submit(csrf_client(), page(invitation), new_operator(password2="different")).status_code == 200
    assert submit(csrf_client(), page(invitation), new_operator()).status_code == 200
    assert Agent.objects.filter(widget=widget).count() == 1


def test_a_banned_operator_invited_again_returns_to_active(widget):
    agent = HumanAgentFactory(widget=widget, status=Agent.Status.BANNED)
    get_user_model().objects.filter(pk=agent.user_id).update(password="!")  # unusable: sets a password
    invitation = new_invitation(widget, email=agent.user.email)
    assert submit(csrf_client(), page(invitation), new_operator()).status_code == 200
    agent.refresh_from_db()
    assert agent.status == Agent.Status.ACTIVE
    assert Agent.objects.filter(widget=widget).count() == 1


def test_accept_is_refused_when_a_restore_took_the_seat(widget):
    widget.account.seats = 1
    widget.account.save()
    invitation = new_invitation(widget)
    HumanAgentFactory(widget=widget)  # e.g. restored after the invitation was sent
    response = submit(csrf_client(), page(invitation), new_operator())
    assert response.status_code == 409 and "No free operator seat" in response.content.decode()
    invitation.refresh_from_db()
    assert invitation.accepted_at is None
    assert Agent.objects.filter(widget=widget).count() == 1


def test_only_get_and_post_are_allowed(widget):
    assert Client().put(page(new_invitation(widget))).status_code == 405


def test_the_page_speaks_the_browsers_language_right_to_left_for_arabic(widget):
    invitation = new_invitation(widget)
    russian = Client(headers={"Accept-Language": "ru"}).get(page(invitation))
    assert '<html lang="ru" dir="ltr">' in russian.content.decode() and russian["Content-Language"] == "ru"
    arabic = Client(headers={"Accept-Language": "ar"}).get(page(invitation)).content.decode()
    assert '<html lang="ar" dir="rtl">' in arabic
    english = Client().get(page(invitation)).content.decode()
    assert '<html lang="en" dir="ltr">' in english and "Operator invitation" in english


def test_the_page_wears_the_consoles_look_without_inline_styles_or_scripts(widget):
    html = csrf_client().get(page(new_invitation(widget))).content.decode()
    assert "console/console.css" in html
    assert "<style" not in html and "style=" not in html and "<script" not in html
