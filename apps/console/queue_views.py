"""The owner's Assign action on the routing queue (the list's Unassigned view while the widget
routes chats): a queued chat given to an operator through the console's transfer. Operators see the
queue without the action (they take a chat by accepting or answering it) and are refused with 403.

An htmx post gets the list fragment back (with the refusal above it and its status code: 422 for a
missing or foreign operator, 409 when the chat no longer waits); a plain form post a 303 back to the
queue, or the list page with the refusal.
"""

from __future__ import annotations

from django.http import HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from apps.core.errors import AppError

from . import forms, selectors, services, views
from .settings.access import owner_required


@owner_required
@require_POST
def assign(request, chat_id: str):
    chat = views._chat_or_404(request, chat_id)
    form = forms.TransferForm(request.POST, targets=selectors.assign_targets(agent=request.agent))
    error, status = None, 200
    if not form.is_valid():
        error, status = " ".join(e for errors in form.errors.values() for e in errors), 422
    else:
        try:
            services.assign_from_queue(owner=request.agent, chat=chat, to_agent=form.cleaned_data["agent"])
        except services.NotQueued:
            error, status = _("This chat is no longer in the queue."), 409
        except AppError as err:
            error, status = views._refusal(err), err.status
    data = views._filter_data(request.POST)
    if not request.htmx:
        if error is None:
            return HttpResponseRedirect(f"{reverse('console:chats')}?{data.urlencode()}", status=303)
        context = views._list_context(request, data=data)
        return render(
            request, "console/chats.html", views.page_context(request, **context, assign_error=error), status=status
        )
    context = views._list_context(request, data=data, fragment=True)
    return render(request, "console/_chat_list.html", {**context, "oob": True, "assign_error": error}, status=status)
