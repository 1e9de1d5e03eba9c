"""Writes of the console itself: signing in and out (the agent event log records both)."""

from __future__ import annotations

from django.contrib.auth import login, logout
from django.db import transaction

from apps.agents.services import record_agent_event

from . import access


@transaction.atomic
def sign_in(request, user) -> None:
    """Log the user in (a new session key, a new CSRF token) and record `console_login` for each
    of the user's operator rows."""
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    for agent in access.operator_rows(user):
        record_agent_event(widget=agent.widget, agent=agent, type="console_login")


@transaction.atomic
def sign_out(request) -> None:
    """End the session; `console_logout` for each operator row of the user it logged in."""
    user = request.user
    if user.is_authenticated:
        for agent in access.operator_rows(user):
            record_agent_event(widget=agent.widget, agent=agent, type="console_logout")
    logout(request)
