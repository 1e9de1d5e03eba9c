"""Seat races with real threads on PostgreSQL: the account row lock decides the last seat."""

import time
from collections import Counter

import pytest
from django.core import mail

from apps.agents import selectors, services
from apps.agents.models import Agent, Invitation
from apps.agents.tests.factories import HumanAgentFactory, InvitationFactory
from tests.support.concurrency import race

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def slow_seat_count(monkeypatch):
    """Widen the window between counting seats and writing, so an unlocked check would lose."""
    real = selectors.seats_used

    def slow(account):
        used = real(account)
        time.sleep(0.3)
        return used

    monkeypatch.setattr(selectors, "seats_used", slow)


def last_seat(widget, *, seats=2):
    widget.account.seats = seats
    widget.account.save(update_fields=["seats"])
    HumanAgentFactory.create_batch(seats - 1, widget=widget)


def client_for(token):
    from rest_framework.test import APIClient

    client = APIClient()
    client.raise_request_exception = False
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def test_two_invitations_for_the_last_seat_over_the_api_one_wins(widget, make_token, monkeypatch):
    # given one free seat and two clients
    last_seat(widget)
    slow_seat_count(monkeypatch)
    token = make_token(widget, ["agents:write"])

    def invite(n):
        def work():
            response = client_for(token).post(
                "/api/v1/agents/invitations",
                {"email": f"racer{n}@example.com"},
                format="json",
                HTTP_X_SERVICE_IDEMPOTENCY_KEY=f"race-{n}",
            )
            return response.status_code, response.json().get("code")

        return work

    # when both invite at once
    results = race([invite(1), invite(2)])

    # then one 201, one 409 seat_limit_reached, one invitation, one mail
    assert Counter(results) == {(201, None): 1, (409, "seat_limit_reached"): 1}, results
    assert Invitation.objects.filter(widget=widget).count() == 1
    assert len(mail.outbox) == 1


def test_two_invitations_for_the_last_seat_in_the_service_one_wins(widget, monkeypatch):
    """The same race without the HTTP layer (whose rate-limit budget also serialises writers on the
    database backend): only the account row lock stands between the two."""
    last_seat(widget)
    slow_seat_count(monkeypatch)

    def invite(n):
        def work():
            try:
                services.invite_agent(widget=widget, email=f"r{n}@example.com", link_for=lambda t: f"https://x/{t}")
                return "invited"
            except services.SeatLimitReached:
                return "seat_limit_reached"

        return work

    results = race([invite(n) for n in range(4)])

    assert Counter(results) == {"invited": 1, "seat_limit_reached": 3}, results
    assert Invitation.objects.filter(widget=widget).count() == 1


def test_two_restores_for_the_last_seat_one_wins(widget, make_token, monkeypatch):
    # given one free seat and two banned humans
    last_seat(widget)
    banned = HumanAgentFactory.create_batch(2, widget=widget, status=Agent.Status.BANNED)
    slow_seat_count(monkeypatch)
    token = make_token(widget, ["agents:write"])

    def restore(agent):
        def work():
            response = client_for(token).post(
                f"/api/v1/agents/{agent.pk}/restore", HTTP_X_SERVICE_IDEMPOTENCY_KEY=f"restore-{agent.pk}"
            )
            return response.status_code, response.json().get("code")

        return work

    # when both are restored at once
    results = race([restore(agent) for agent in banned])

    # then one 200, one 409, and the account never exceeds its seats
    assert Counter(results) == {(200, None): 1, (409, "seat_limit_reached"): 1}, results
    assert selectors.seats_used(widget.account) == widget.account.seats


def test_an_accept_and_a_restore_for_the_last_seat_one_wins(widget, make_token, monkeypatch):
    """Restore needs a free seat (seats minus used); so does following a link whose reserved seat a
    restore may have taken. Both lock the account row: exactly one gets the seat."""
    last_seat(widget)
    InvitationFactory(widget=widget, token="mixed-link-" + "m" * 32)
    agent = HumanAgentFactory(widget=widget, status=Agent.Status.BANNED)
    slow_seat_count(monkeypatch)
    token = make_token(widget, ["agents:write"])

    def accept():
        try:
            services.accept_invitation(token="mixed-link-" + "m" * 32, name="New", password="long-enough-pass-1")
            return "accepted"
        except services.SeatLimitReached:
            return "seat_limit_reached"

    def restore():
        response = client_for(token).post(
            f"/api/v1/agents/{agent.pk}/restore", HTTP_X_SERVICE_IDEMPOTENCY_KEY="mixed-restore"
        )
        return response.status_code

    results = race([accept, restore])

    assert results in (["accepted", 409], ["seat_limit_reached", 200]), results
    assert selectors.seats_used(widget.account) == widget.account.seats


def test_one_invitation_link_followed_twice_at_once_makes_one_operator(widget):
    InvitationFactory(widget=widget, token="same-link-" + "z" * 33)

    def accept(name):
        def work():
            try:
                services.accept_invitation(token="same-link-" + "z" * 33, name=name, password="long-enough-pass-1")
                return "won"
            except services.InvitationUnusable as exc:
                return f"refused:{exc.state}"

        return work

    results = race([accept("A"), accept("B")])

    assert Counter(results) == {"won": 1, "refused:accepted": 1}, results
    assert Agent.objects.filter(widget=widget).count() == 1
