"""The macro picker of the chat view: running a macro the operator may see on the open chat, through
the API's own service (apps.macros.services.run_macro), with the operator as the actor."""

from __future__ import annotations

from django.contrib import messages as flash
from django.http import Http404
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from apps.core.errors import AppError
from apps.macros import selectors as macro_selectors
from apps.macros import services as macro_services

from .access import operator_required
from .views import _back, _chat_or_404, _chat_page, _composer_context, _refresh, parse_id


@require_POST
@operator_required
def run_macro(request, chat_id: str):
    """Run `macro_id` on the chat. Another operator's personal macro is a 404 like a missing one; a
    refusal answers with the API's words (422) and changes nothing."""
    chat = _chat_or_404(request, chat_id)
    agent = request.agent
    macro = macro_selectors.get_macro_for_agent(
        widget=agent.widget, agent=agent, macro_id=parse_id(request.POST.get("macro_id")) or 0
    )
    if macro is None:
        raise Http404("No such macro.")
    error, status, notice = None, 200, None
    try:
        macro_services.run_macro(widget=agent.widget, chat=chat, macro=macro, actor=agent)
    except AppError as err:
        error, status = err.detail, err.status
    else:
        notice = _("Macro “%(name)s” ran.") % {"name": macro.name}
    if not request.htmx:
        if error is None:
            flash.success(request, notice)
            return _back(chat)
        return _chat_page(request, chat, status=status, composer={"composer_error": error})
    chat.refresh_from_db()
    context = _composer_context(chat, composer_error=error, macro_notice=notice)
    response = render(request, "console/_composer.html", context, status=status)
    return _refresh(response, "console:messages", "console:list", "console:panel") if status == 200 else response
