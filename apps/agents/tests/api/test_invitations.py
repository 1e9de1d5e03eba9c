"""GET/POST /v1/agents/invitations, DELETE /v1/agents/invitations/{id}."""

import re
from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from apps.agents.api.serializers import InvitationDoc, invitation_payload
from apps.agents.models import Agent, Invitation
from apps.agents.services import hash_token
from apps.agents.tests.conftest import idem
from apps.agents.tests.factories import AgentFactory, AIAgentFactory, HumanAgentFactory, InvitationFactory
from apps.core.models import IdempotencyKey
from tests.support.factories import WidgetFactory
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

INVITATIONS = "/api/v1/agents/invitations"
LINK = re.compile(r"http://testserver/invite/([A-Za-z0-9_-]+)")


def seats(widget, n):
    widget.account.seats = n
    widget.account.save(update_fields=["seats"])


def invite(client, email="new@example.com", **headers):
    return client.post(INVITATIONS, {"email": email}, format="json", **{**idem(), **headers})


# --- create ---------------------------------------------------------------------------------------------


def test_invite_mails_a_link_and_stores_only_the_token_hash(api, widget):
    response = invite(api(scopes=["agents:write"]), "New.Person@Example.com")
    assert response.status_code == 201
    body = response.json()
    assert set(body) == set(InvitationDoc().fields)
    assert body["email"] == "new.person@example.com" and body["status"] == "pending" and body["agent_id"] is None
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["new.person@example.com"]
    token = LINK.search(mail.outbox[0].body).group(1)
    invitation = Invitation.objects.get(pk=body["id"])
    assert invitation.token_hash == hash_token(token) and token not in invitation.token_hash
    assert len(token) >= 40
    assert token not in response.content.decode()


def test_invitation_expires_in_seven_days(api):
    before = timezone.now()
    invitation = Invitation.objects.get(pk=invite(api()).json()["id"])
    assert before + timedelta(days=7) <= invitation.expires_at <= timezone.now() + timedelta(days=7)


def test_the_link_uses_public_base_url_when_configured(api, settings):
    settings.PUBLIC_BASE_URL = "https://chat.example.com/"
    invite(api())
    assert "https://chat.example.com/invite/" in mail.outbox[0].body


def test_each_invitation_gets_its_own_token(api):
    client = api()
    invite(client, "a@example.com")
    invite(client, "b@example.com")
    tokens = {LINK.search(m.body).group(1) for m in mail.outbox}
    assert len(tokens) == 2


@pytest.mark.parametrize("body", [{"email": "not-an-email"}, {"email": ""}, {}, {"email": "a@example.com", "x": 1}])
def test_bad_input_is_422(api, body):
    assert_problem(api().post(INVITATIONS, body, format="json", **idem()), 422)
    assert mail.outbox == [] and not Invitation.objects.exists()


@pytest.mark.parametrize("email", ["root@localhost", "a@[127.0.0.1]", "a@[IPv6:::1]", "postmaster@LOCALHOST"])
def test_an_address_at_an_ip_or_a_local_host_is_422_and_spends_nothing(api, widget, email):
    seats(widget, 100)
    problem = assert_problem(invite(api(), email), 422)
    assert "email" in problem["errors"]
    assert mail.outbox == [] and not Invitation.objects.exists()
    for i in range(10):  # the hourly budget is untouched
        assert invite(api(), f"p{i}@example.com").status_code == 201


def test_an_email_of_a_current_operator_is_422(api, widget):
    HumanAgentFactory(widget=widget, email="op@example.com")
    body = assert_problem(invite(api(), "OP@example.com"), 422)
    assert "email" in body["errors"]
    assert mail.outbox == []


def test_invite_needs_an_idempotency_key_and_refuses_reuse(api):
    client = api()
    assert_problem(client.post(INVITATIONS, {"email": "a@example.com"}, format="json"), 400, "idempotency_key_missing")
    key = idem()
    assert invite(client, "a@example.com", **key).status_code == 201
    assert_problem(invite(client, "b@example.com", **key), 409, "idempotency_key_reused")
    assert Invitation.objects.count() == 1 and len(mail.outbox) == 1


def test_invite_needs_agents_write(api, client):
    assert_problem(client.post(INVITATIONS, {"email": "a@example.com"}, format="json"), 401)
    assert_problem(invite(api(scopes=["agents:read"])), 403, "missing_scope")


# --- seats -------------------------------------------------------------------------------------------------


def test_invite_is_refused_when_every_seat_is_used(api, widget):
    seats(widget, 2)
    HumanAgentFactory.create_batch(2, widget=widget)
    assert_problem(invite(api()), 409, "seat_limit_reached")
    assert mail.outbox == [] and not Invitation.objects.exists()


def test_free_seats_must_outnumber_outstanding_invitations(api, widget):
    seats(widget, 3)
    HumanAgentFactory(widget=widget)  # two seats free
    client = api()
    assert invite(client, "a@example.com").status_code == 201
    assert invite(client, "b@example.com").status_code == 201
    assert_problem(invite(client, "c@example.com"), 409, "seat_limit_reached")
    assert len(mail.outbox) == 2


def test_expired_revoked_and_accepted_invitations_reserve_no_seat(api, widget):
    seats(widget, 1)
    InvitationFactory(widget=widget, expires_at=timezone.now() - timedelta(seconds=1))
    InvitationFactory(widget=widget, revoked_at=timezone.now())
    InvitationFactory(widget=widget, accepted_at=timezone.now())
    assert invite(api()).status_code == 201


def test_ai_webhook_and_banned_agents_take_no_seat_from_invitations(api, widget):
    seats(widget, 1)
    AIAgentFactory(widget=widget)
    AgentFactory(widget=widget, type=Agent.Type.WEBHOOK)
    HumanAgentFactory(widget=widget, status=Agent.Status.BANNED)
    assert invite(api()).status_code == 201


def test_seats_and_invitations_count_across_the_accounts_widgets(api, widget):
    seats(widget, 2)
    sibling = WidgetFactory(account=widget.account)
    HumanAgentFactory(widget=sibling)
    InvitationFactory(widget=sibling)
    assert_problem(invite(api()), 409, "seat_limit_reached")


def test_other_accounts_do_not_use_this_accounts_seats(api, widget, other_widget):
    seats(widget, 1)
    HumanAgentFactory.create_batch(3, widget=other_widget)
    InvitationFactory.create_batch(3, widget=other_widget)
    assert invite(api()).status_code == 201


# --- mail failure ------------------------------------------------------------------------------------------


def test_a_mail_failure_is_502_and_stores_nothing(api, widget, monkeypatch):
    from apps.agents import services

    def broken(*args, **kwargs):
        raise OSError("smtp down")

    monkeypatch.setattr(services, "send_mail", broken)
    key = idem()
    client = api()
    assert_problem(invite(client, **key), 502, "mail_failed")
    assert not Invitation.objects.exists()
    assert not IdempotencyKey.objects.filter(widget=widget).exists()
    # the key was released: the same request succeeds once mail works again
    monkeypatch.undo()
    assert invite(client, **key).status_code == 201


def test_the_mail_is_sent_before_the_invitation_is_stored(api, monkeypatch):
    from apps.agents import services

    stored_when_mailed = []
    real = services.send_mail

    def spy(*args, **kwargs):
        stored_when_mailed.append(Invitation.objects.count())
        return real(*args, **kwargs)

    monkeypatch.setattr(services, "send_mail", spy)
    assert invite(api()).status_code == 201
    assert stored_when_mailed == [0] and Invitation.objects.count() == 1


# --- rate limit ---------------------------------------------------------------------------------------------


def test_at_most_10_invitations_per_hour_per_widget(api, widget, other_widget):
    seats(widget, 100)
    client = api()
    for i in range(10):
        assert invite(client, f"p{i}@example.com").status_code == 201
    response = invite(client, "p10@example.com")
    assert_problem(response, 429, "rate_limited")
    assert int(response["Retry-After"]) > 0
    assert Invitation.objects.filter(widget=widget).count() == 10
    # another widget has its own budget
    assert invite(api(w=other_widget), "q@example.com").status_code == 201


# --- list --------------------------------------------------------------------------------------------------


def test_list_shows_invitations_with_their_status_newest_first(api, widget, other_widget):
    pending = InvitationFactory(widget=widget)
    expired = InvitationFactory(widget=widget, expires_at=timezone.now() - timedelta(minutes=1))
    revoked = InvitationFactory(widget=widget, revoked_at=timezone.now())
    accepted = InvitationFactory(widget=widget, accepted_at=timezone.now())
    InvitationFactory(widget=other_widget)
    body = api(scopes=["agents:read"]).get(INVITATIONS).json()
    assert [(i["id"], i["status"]) for i in body["data"]] == [
        (accepted.pk, "accepted"),
        (revoked.pk, "revoked"),
        (expired.pk, "expired"),
        (pending.pk, "pending"),
    ]
    assert body["next_cursor"] is None


def test_list_is_not_read_as_an_agent_id(api, widget):
    """agents/invitations must never be captured by agents/{id}."""
    InvitationFactory(widget=widget)
    body = api().get(INVITATIONS).json()
    assert set(body) == {"data", "next_cursor"}


def test_list_paginates_and_refuses_bad_parameters(api, widget):
    InvitationFactory.create_batch(3, widget=widget)
    client = api()
    page = client.get(INVITATIONS, {"limit": 2}).json()
    assert len(page["data"]) == 2 and page["next_cursor"]
    assert len(client.get(INVITATIONS, {"limit": 2, "cursor": page["next_cursor"]}).json()["data"]) == 1
    assert_problem(client.get(INVITATIONS, {"limit": 500}), 422)
    assert_problem(client.get(INVITATIONS, {"status": "pending"}), 422)


def test_list_needs_agents_read(api):
    assert_problem(api(scopes=["agents:write"]).get(INVITATIONS), 403, "missing_scope")


def test_payload_builder_matches_the_documented_shape(widget):
    assert set(invitation_payload(InvitationFactory(widget=widget))) == set(InvitationDoc().fields)


# --- revoke -------------------------------------------------------------------------------------------------


def test_delete_revokes_without_an_idempotency_key(api, widget):
    invitation = InvitationFactory(widget=widget)
    assert api(scopes=["agents:write"]).delete(f"{INVITATIONS}/{invitation.pk}").status_code == 204
    invitation.refresh_from_db()
    assert invitation.revoked_at is not None and invitation.state() == "revoked"


def test_revoking_frees_the_reserved_seat(api, widget):
    seats(widget, 1)
    invitation = InvitationFactory(widget=widget)
    client = api()
    assert_problem(invite(client), 409, "seat_limit_reached")
    client.delete(f"{INVITATIONS}/{invitation.pk}")
    assert invite(client).status_code == 201


def test_delete_of_an_accepted_invitation_keeps_the_operator(api, widget):
    agent = HumanAgentFactory(widget=widget)
    invitation = InvitationFactory(widget=widget, accepted_at=timezone.now(), agent=agent)
    assert api().delete(f"{INVITATIONS}/{invitation.pk}").status_code == 204
    invitation.refresh_from_db()
    agent.refresh_from_db()
    assert invitation.revoked_at is None and invitation.state() == "accepted"
    assert agent.status == Agent.Status.ACTIVE


def test_delete_of_a_foreign_or_missing_invitation_is_404(api, other_widget):
    foreign = InvitationFactory(widget=other_widget)
    client = api()
    assert_problem(client.delete(f"{INVITATIONS}/{foreign.pk}"), 404, "not_found")
    assert_problem(client.delete(f"{INVITATIONS}/{foreign.pk + 100}"), 404, "not_found")
    foreign.refresh_from_db()
    assert foreign.revoked_at is None


def test_delete_needs_agents_write(api, widget):
    invitation = InvitationFactory(widget=widget)
    assert_problem(api(scopes=["agents:read"]).delete(f"{INVITATIONS}/{invitation.pk}"), 403, "missing_scope")
