"""Setting a chat's labels from the context panel: the rules of PUT /v1/chats/{id}/labels
(`check_chat_label_names`) and its service, `set_chat_labels(by="agent")`.

As the panel's other actions: an htmx post gets the #context fragment back (422 with the API's
words when refused, nothing changed then) and asks the list to re-read its chips; a plain form post
a redirect back to the chat, or the chat page with the refusal.
"""

from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.http import require_POST

from apps.chats import services as chat_services
from apps.core.errors import AppError

from . import views
from .access import operator_required


def _refusal(error: AppError) -> str:
    """The API's words: the messages of its `errors`, else its `detail`."""
    messages = [message for values in (error.errors or {}).values() for message in values]
    return " ".join(messages) or error.detail


@require_POST
@operator_required
def set_labels(request, chat_id: str):
    chat = views._chat_or_404(request, chat_id)
    error = None
    try:
        names = chat_services.check_chat_label_names(request.POST.getlist("labels"))
        chat_services.set_chat_labels(widget=request.agent.widget, chat=chat, names=names, by="agent")
    except AppError as exc:
        error = _refusal(exc)
    if error is None and not request.htmx:
        return views._back(chat)
    if error is not None and not request.htmx:
        return views._chat_page(request, chat, status=422, context_forms={"labels_error": error})
    context = views.context_panel_context(chat, labels_error=error, context_saved=error is None)
    response = render(request, "console/_context.html", context, status=422 if error else 200)
    return response if error else views._refresh(response, "console:list")
