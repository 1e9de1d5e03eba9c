"""Who may open the settings pages: the console's signed-in agent, and only with role `owner`.

SECURITY: the widget is the console's (the session's choice among the user's own agent rows, see
apps.console.access); every row a page names is looked up inside that widget, so another widget's id
answers 404 exactly like a missing one. An operator of the widget is refused with 403 before the
view runs, whatever the method.
"""

from __future__ import annotations

from functools import wraps

from django.shortcuts import render

from apps.agents.models import Agent
from apps.audit import services as audit

from ..access import operator_required


def is_owner(agent: Agent | None) -> bool:
    return agent is not None and agent.role == Agent.Role.OWNER


def owner_required(view):
    """Put it above the view's other decorators (`require_POST` and the like), so an operator gets 403
    whatever the method.

    The view runs for the widget's owner with `request.agent` set and the owner named as the actor
    of every audit row it writes; any other agent gets the 403 page, anyone else the sign-in page."""

    @operator_required
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not is_owner(request.agent):
            from ..views import page_context

            return render(
                request, "console/settings/forbidden.html", page_context(request, settings_page=True), status=403
            )
        with audit.acting(audit.agent_actor(request.agent)):
            return view(request, *args, **kwargs)

    return wrapped
