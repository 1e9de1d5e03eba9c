"""`{% macro_picker %}`: the macros the signed-in operator may run on the chat being drawn (shared ones
and their own personal ones), next to the composer."""

from __future__ import annotations

from django import template

from apps.macros import selectors as macro_selectors

register = template.Library()


@register.inclusion_tag("console/_macros.html", takes_context=True)
def macro_picker(context):
    request = context.get("request")
    agent = getattr(request, "agent", None)
    macros = macro_selectors.list_macros_for_agent(widget=agent.widget, agent=agent) if agent is not None else []
    return {"chat": context.get("chat"), "macros": macros, "csrf_token": context.get("csrf_token")}
