"""Who may use the operator console, and for which widget.

SECURITY: only an active Django user with a non-banned human agent row signs in and stays in. The
widget is the one the session chose among the user's own agent rows (never read from a URL or a
form field other than the switch, which checks it against those rows); every chat is looked up
inside that widget, so another widget's chat id answers 404 exactly like a missing one.
"""

from __future__ import annotations

from functools import wraps
from urllib.parse import urlencode

from django.contrib.auth import logout
from django.db.models import QuerySet
from django.http import HttpResponseRedirect
from django.urls import reverse
from django_htmx.http import HttpResponseClientRedirect

from apps.agents.models import Agent
from apps.audit import services as audit

SESSION_WIDGET_KEY = "console_widget_id"


def operator_rows(user) -> QuerySet[Agent]:
    """The user's agent rows that may use the console: human, not banned, one per widget."""
    return (
        Agent.objects.filter(user=user, type=Agent.Type.HUMAN)
        .exclude(status=Agent.Status.BANNED)
        .select_related("widget")
        .order_by("widget_id")
    )


def may_sign_in(user) -> bool:
    return user.is_active and operator_rows(user).exists()


def lost_console_access(user) -> bool:
    """Whether the signed-in `user`, who may not use the console now, has agent rows (all banned or
    not human): an operator who lost access. A user who never had one (a Django admin's staff) is
    not an operator whose session the console ends."""
    return not user.is_active or Agent.objects.filter(user=user).exists()


def resolve(request) -> tuple[Agent | None, list[Agent]]:
    """(the agent the console speaks for, every agent row of the user) from the session."""
    user = request.user
    if not user.is_authenticated or not user.is_active:
        return None, []
    rows = list(operator_rows(user))
    if not rows:
        return None, []
    chosen = request.session.get(SESSION_WIDGET_KEY)
    agent = next((row for row in rows if row.widget_id == chosen), rows[0])
    return agent, rows


def _to_login(request):
    url = reverse("console:login")
    if request.method == "GET" and not request.htmx:
        url = f"{url}?{urlencode({'next': request.get_full_path()})}"
    if request.htmx:
        return HttpResponseClientRedirect(url)
    return HttpResponseRedirect(url)


def operator_required(view):
    """The view runs with `request.agent` (and `request.agent_rows`); anyone else goes to the sign-in
    page (htmx requests by HX-Redirect). A signed-in user who lost every operator row is signed out;
    any other signed-in user keeps the session (a GET another site can send the browser to never
    ends, say, an admin's session)."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        agent, rows = resolve(request)
        if agent is None:
            if request.user.is_authenticated and lost_console_access(request.user):
                logout(request)
            return _to_login(request)
        request.agent, request.agent_rows = agent, rows
        # The operator is the actor of what they do here (audit rows; a push skips what they did
        # to themselves, such as taking a chat).
        with audit.acting(audit.agent_actor(agent)):
            return view(request, *args, **kwargs)

    return wrapped
