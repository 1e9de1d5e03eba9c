""" "Merge with…" in the chat's context panel: find another contact of the widget, confirm, merge the
chat's contact into it (apps.chats.services.merge_contacts, the service of POST
/v1/contacts/{id}/merge, with its refusals in the console's words). Afterwards the panel shows the
contact that remains.

Three steps, each a plain form (htmx swaps the merge box, or the whole panel once merged): a search
(GET, `q`), the choice of a found contact (a radio group: Tab reaches it, arrows choose), the
confirmation naming both contacts (POST with `confirm`).
"""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from apps.audit import services as audit
from apps.chats import selectors as chat_selectors
from apps.chats import services as chat_services
from apps.chats.models import Chat, Contact
from apps.core.errors import AppError, ValidationFailed

from . import present, selectors, views
from .access import operator_required

QUERY_MAX = 100

# The service's refusals in the console's words (the API answers the same codes).
REFUSALS = {
    "merge_into_self": gettext_lazy("A contact cannot be merged into itself."),
    "merge_identity_conflict": gettext_lazy(
        "Both contacts are verified as different people (different IDs on your site); they cannot be merged."
    ),
    "merge_channel_conflict": gettext_lazy(
        "Both contacts write from their own account on the same messenger or channel; they cannot be merged."
    ),
    "not_found": gettext_lazy("That contact no longer exists."),
}


def _label(contact: Contact) -> str:
    """The contact's name and what tells two people of one name apart (e-mail, phone, site ID)."""
    name = present.visitor_name(contact, "")
    details = [value for value in (contact.email, contact.phone, contact.external_id) if value and value != name]
    return f"{name} ({', '.join(details)})" if details else name


def _box(request, chat: Chat, *, status: int = 200, **merge) -> HttpResponse:
    """The merge box alone (htmx), or the chat page with it."""
    merge = {"query": "", "candidates": None, **merge}
    if not request.htmx:
        return views._chat_page(request, chat, status=status, context_forms={"merge": merge})
    return render(request, "console/_merge.html", {"chat": chat, "merge": merge}, status=status)


def _query(raw: str | None) -> str:
    return (raw or "").strip()[:QUERY_MAX]


@never_cache
@require_GET
@operator_required
def merge_search(request, chat_id: str):
    """The widget's other contacts matching `q` (name, e-mail, phone, external id)."""
    chat = views._chat_or_404(request, chat_id)
    query = _query(request.GET.get("q"))
    if not query:
        return _box(request, chat, error=_("Type a name, an e-mail, a phone or an ID to search."), status=422)
    found = chat_selectors.find_merge_candidates(widget=request.agent.widget, exclude=chat.contact, query=query)
    candidates = [{"guid": c.guid, "label": _label(c)} for c in found]
    return _box(request, chat, query=query, candidates=candidates)


@require_POST
@operator_required
def merge_contact(request, chat_id: str):
    """`into` chosen: without `confirm` the confirmation naming both; with it, the merge."""
    chat = views._chat_or_404(request, chat_id)
    widget = request.agent.widget
    into = _query(request.POST.get("into"))
    target = Contact.objects.live().filter(widget=widget, guid=into).first() if into else None
    if target is None:
        return _box(request, chat, error=str(REFUSALS["not_found"]), status=404 if into else 422)
    if request.POST.get("confirm") != "1":
        return _box(request, chat, confirm={"source": _label(chat.contact), "target": _label(target), "guid": into})
    try:
        target = chat_services.merge_contacts(
            widget=widget, source=chat.contact, target=target, actor=audit.agent_actor(request.agent)
        )
    except ValidationFailed as err:  # the attributes together past the limit: the API's words
        messages = [message for field in (err.errors or {}).values() for message in field]
        return _box(request, chat, error=" ".join(messages) or err.detail, status=422)
    except AppError as err:
        return _box(request, chat, error=str(REFUSALS.get(err.code, err.detail)), status=err.status)
    if not request.htmx:
        return views._back(chat)
    fresh = selectors.get_chat(agent=request.agent, chat_id=chat.pk) or chat
    merged = _("Merged into %(name)s.") % {"name": present.visitor_name(target, "")}
    response = render(request, "console/_context.html", views.context_panel_context(fresh, context_saved=merged))
    return views._refresh(response, "console:panel", "console:list")
