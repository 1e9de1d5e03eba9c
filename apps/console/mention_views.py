"""The console's mentions: the "Mentions" page (the operator's own, unread first), opening one (the
chat at the note, the mention read) and the operators the note box's `@` picker lists. Reads and
writes go through apps.mentions' selectors and services, as the API's do."""

from __future__ import annotations

from django.http import Http404, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from apps.mentions import selectors, services

from .access import operator_required
from .views import page_context, parse_id

# The page lists the newest this many (unread first): a mention older than that is in its chat.
PAGE_ROWS = 100


@never_cache
@require_GET
@operator_required
def mentions(request):
    agent = request.agent
    rows = list(selectors.list_mentions(agent.widget, agent_id=agent.pk).order_by(*selectors.ORDERING)[:PAGE_ROWS])
    return render(request, "console/mentions.html", page_context(request, mentions=rows, mentions_page=True))


@require_POST
@operator_required
def open_mention(request, mention_id: str):
    """The mention read, then its chat at the note (an operator opens only their own mentions)."""
    agent = request.agent
    mention = selectors.get_mention(agent.widget, parse_id(mention_id))
    if mention is None or mention.agent_id != agent.pk:
        raise Http404("No such mention.")
    services.mark_mention_read(widget=agent.widget, mention=mention)
    url = reverse("console:chat", args=[mention.chat_id]) + f"#m-{mention.message_id}"
    return HttpResponseRedirect(url, status=303)


@never_cache
@require_GET
@operator_required
def mention_picks(request):
    """JSON `{items: [{id, name}]}`: the widget's human operators a note can mention, the operator
    themselves left out (their own note never mentions them)."""
    agent = request.agent
    items = [entry for entry in selectors.picker_entries(agent.widget) if entry["id"] != agent.pk]
    return JsonResponse({"items": items})
