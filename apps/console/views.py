"""The operator console's pages and actions: thin views (parse a form, look the chat up inside the
agent's widget, call one service of apps.chats or apps.agents, render).

Actions answer htmx requests with the fragment they change (an error in it, and the status code,
when the input or the chat's state refuses: nothing changed then) and plain form posts with a
redirect back to the chat, so the console also works without JavaScript.
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

from django.http import Http404, HttpResponse, HttpResponseRedirect, JsonResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from apps.ai import services as ai_services
from apps.chats import selectors as chat_selectors
from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.core.errors import AppError
from apps.mentions import selectors as mention_selectors
from apps.platform.numbers import MAX_ID

from . import context_selectors, forms, inbox, present, selectors, services
from .access import operator_required

# The console's words for the refusals of the services it calls (the API keeps their English detail);
# a refusal not named here is shown with its detail as the service wrote it.
REFUSALS = {
    "chat_is_spam": gettext_lazy("This chat is marked as spam: move it back to active first."),
    "already_rated": gettext_lazy("The visitor has already rated this chat."),
    "body_too_large": gettext_lazy("The file is too large: up to 10 MB."),
    "ai_unavailable": gettext_lazy("The AI cannot suggest a reply: the widget has no assistant or provider key."),
    "provider_failure": gettext_lazy("The AI provider did not answer. Try again later."),
    "rate_limited": gettext_lazy("Too many requests. Try again shortly."),
}


def _refusal(err: AppError) -> str:
    return str(REFUSALS.get(err.code, err.detail))


def parse_id(raw: str | None) -> int | None:
    """An id from the URL or the query (ASCII digits within the 64-bit range), else None."""
    if raw is None or not raw.isascii() or not raw.isdigit() or len(raw) > 20:
        return None
    value = int(raw)
    return value if 0 < value <= MAX_ID else None


def _chat_or_404(request, chat_id: str) -> Chat:
    chat = selectors.get_chat(agent=request.agent, chat_id=parse_id(chat_id) or 0)
    if chat is None:
        raise Http404("No such chat.")
    return chat


FILTER_FIELDS = ("view", "status", "channel", "q", "label", "from", "to", "agent_id", "rating", "handling")


def _filter_data(data: QueryDict) -> QueryDict:
    """The list's filters out of a query or a form post (nothing else is carried into links)."""
    kept = QueryDict(mutable=True)
    for name in FILTER_FIELDS:
        if name in data:
            # The label select's "Any label" is an empty value: no label filter.
            values = [v for v in data.getlist(name) if v] if name == "label" else data.getlist(name)
            if values or name != "label":
                kept.setlist(name, values)
    return kept


def _display_name(chat: Chat) -> str:
    return present.visitor_name(chat.contact, getattr(chat, "visitor_page", "") or "")


# --- pages -------------------------------------------------------------------------------------------


def _query(filters: selectors.ChatFilters) -> str:
    """The list's URL query for `filters` (what a link to them carries)."""
    return urlencode(filters.params())


def _list_context(
    request, *, current: Chat | None = None, data: QueryDict | None = None, fragment: bool = False
) -> dict:
    """The list under the request's filters; the whole sidebar unless only the list's `fragment`
    (htmx's refresh) is drawn."""
    data = _filter_data(request.GET) if data is None else data
    labels = list(chat_selectors.list_labels(widget=request.agent.widget))
    form = forms.FilterForm(data or None, labels=labels)
    filters = form.filters()
    return {
        "filter_form": form,
        "filters": filters,
        "filter_items": filters.params(),
        "filter_chips": [] if fragment else inbox.filter_chips(request.agent, filters),
        "widget_labels": labels,
        "filter_query": data.urlencode(),
        **inbox.list_reads(request.agent, filters),
        "views": selectors.VIEWS,
        "saved_views": [] if fragment else _saved_views(request, filters),
        "save_view_form": forms.SaveViewForm(),
        "current": current,
    }


def _saved_views(request, filters: selectors.ChatFilters) -> list[dict]:
    """The operator's saved views as the sidebar links them, the one matching the filters marked."""
    rows = []
    for saved in selectors.saved_views(agent=request.agent):
        kept = selectors.ChatFilters(view=saved.view, status=saved.status, channel=saved.channel, q=saved.q)
        rows.append({"id": saved.pk, "name": saved.name, "query": _query(kept), "current": kept == filters})
    return rows


@require_POST
@operator_required
def save_view(request):
    """Keep the list's filters under a name (a plain form post: back to the list, showing them)."""
    form = forms.SaveViewForm(request.POST)
    if form.is_valid():
        filters = form.filters()
        try:
            services.save_view(agent=request.agent, name=form.cleaned_data["name"], filters=filters)
        except services.SavedViewRefused as err:
            for message in (err.errors or {}).get("name", []):
                form.add_error("name", message)
        else:
            return HttpResponseRedirect(f"{reverse('console:chats')}?{_query(filters)}", status=303)
    # the list as it was, with the refusal under the name
    context = _list_context(request, data=_filter_data(request.POST))
    context["save_view_form"] = form
    return render(request, "console/chats.html", page_context(request, **context), status=422)


@require_POST
@operator_required
def delete_view(request, view_id: str):
    if not services.delete_view(agent=request.agent, view_id=parse_id(view_id) or 0):
        raise Http404("No such saved view.")
    return HttpResponseRedirect(reverse("console:chats"), status=303)


def _script_strings() -> dict[str, str]:
    """The words console.js writes into the page, in the console's language (read from the page's
    JSON block: the script itself holds no text)."""
    return {
        "connected": _("Connected"),
        "connecting": _("Connecting…"),
        "reconnecting": _("Reconnecting…"),
        "not_an_operator": _("You are no longer an operator of this widget."),
        "too_many_consoles": _("Too many consoles are open: close another tab."),
        "visitor": _("Visitor"),
        "visitor_typing": _("The visitor is typing…"),
        "online": _("Online"),
        "away": _("Away"),
        "presence_online": _("Presence: online. Toggle online or away"),
        "presence_away": _("Presence: away. Toggle online or away"),
        "alerts_on": _("Alerts on"),
        "alerts_off": _("Alerts off"),
        "alert_title": _("New visitor message"),
        "alert_file": _("A file"),
        "assigned_title": _("Chat assigned to you"),
        "mention_title": _("%(name)s mentioned you"),
        "mention_someone": _("An operator"),
        "mention_open": _("Open"),
        "sla_now": str(present.SLA_NOW),
        "sla_minutes": str(present.SLA_MINUTES),
        "sla_hours": str(present.SLA_HOURS),
    }


def page_context(request, **extra) -> dict:
    agent = request.agent
    return {
        "agent": agent,
        "agent_rows": request.agent_rows,
        "presence": "away" if agent.status == agent.Status.RELAXATION else "online",
        "console_strings": _script_strings(),
        "hours": selectors.business_hours(agent=agent),
        # the count on the header's "Mentions" item
        "mentions_unread": mention_selectors.count_unread(widget=agent.widget, agent_id=agent.pk),
        **extra,
    }


@never_cache
@require_GET
@operator_required
def chat_list(request):
    if request.htmx and not request.htmx.boosted:
        # The list and, out of band, the views' counts (they change with the list).
        context = _list_context(request, fragment=True)
        return render(request, "console/_chat_list.html", {**context, "oob": True})
    context = _list_context(request)
    return render(request, "console/chats.html", page_context(request, **context))


def _panel_context(request, chat: Chat, **extra) -> dict:
    targets = selectors.transfer_targets(agent=request.agent)
    return {
        "agent": request.agent,
        "chat": chat,
        "contact_name": _display_name(chat),
        "transfer_form": extra.pop("transfer_form", None) or forms.TransferForm(targets=targets),
        "online_ids": selectors.online_agent_ids(agent=request.agent),
        "panel_error": None,
        "confirm": None,
        **extra,
    }


def _composer_context(chat: Chat, **extra) -> dict:
    return {
        "chat": chat,
        "reply_form": extra.pop("reply_form", None) or forms.ReplyForm(auto_id="reply_%s"),
        "note_form": extra.pop("note_form", None) or forms.NoteForm(auto_id="note_%s"),
        "file_form": extra.pop("file_form", None) or forms.FileForm(auto_id="file_%s"),
        "composer_error": None,
        "can_suggest": selectors.can_suggest(chat),
        "suggested_sources": [],
        **extra,
    }


CONTEXT_FORMS = {
    "contact_form": forms.ContactForm,
    "attribute_form": forms.AttributeForm,
    "tags_form": forms.TagsForm,
}


def context_panel_context(chat: Chat, **extra) -> dict:
    """What _context.html draws for `chat` (a chat `get_chat` found, with its contact); `extra`
    replaces a blank form by a bound one with its errors, or says what was saved."""
    bound = {key: extra.pop(key, None) or form_class(contact=chat.contact) for key, form_class in CONTEXT_FORMS.items()}
    return {
        "chat": chat,
        "details": context_selectors.chat_context(chat=chat),
        "chat_labels": context_selectors.chat_labels(chat=chat),
        "labels_error": None,
        "context_saved": False,
        "remove_form": None,
        **bound,
        **extra,
    }


def _chat_page(
    request,
    chat: Chat,
    *,
    status: int = 200,
    panel: dict | None = None,
    composer: dict | None = None,
    context_forms: dict | None = None,
):
    messages, has_older = selectors.latest_messages(chat)
    context = page_context(
        request,
        **{
            **_list_context(request, current=chat),
            **_panel_context(request, chat, **(panel or {})),
            **_composer_context(chat, **(composer or {})),
            **context_panel_context(chat, **(context_forms or {})),
        },
        messages=_view_messages(messages, chat),
        has_older=has_older,
    )
    return render(request, "console/chat.html", context, status=status)


@never_cache
@require_GET
@operator_required
def chat_detail(request, chat_id: str):
    return _chat_page(request, _chat_or_404(request, chat_id), panel=_confirmation(request))


def _confirmation(request) -> dict:
    """`?confirm=spam`: the panel asks before the destructive action (with or without the script)."""
    return {"confirm": "spam"} if request.GET.get("confirm") == "spam" else {}


def _view_messages(messages: list[Message], chat: Chat) -> list[dict]:
    """What a message row draws: the message plus its author's label and file link."""
    rows = []
    for message in messages:
        if message.author_kind == Message.Author.CLIENT:
            author = _display_name(chat)
        elif message.author_kind == Message.Author.SYSTEM:
            author = _("System")
        elif message.agent is not None:
            author = message.agent.name
        else:
            author = _("AI operator") if message.author_kind == Message.Author.AI else _("Operator")
        buttons = []
        if message.type == Message.Type.KEYBOARD and isinstance(message.keyboard, dict):
            for button in message.keyboard.get("buttons") or []:
                url = str(button.get("url") or "")
                if url.startswith("https://"):  # only links the keyboard rules accept are drawn as links
                    buttons.append({"label": button.get("label") or url, "url": url, "style": button.get("style")})
        rows.append(
            {
                "m": message,
                "author": author,
                "file_url": selectors.file_url(message.file) if message.file_id and message.file else None,
                "buttons": buttons,
                "note": message.visibility != Message.Visibility.PUBLIC,
            }
        )
    return rows


@never_cache
@require_GET
@operator_required
def chat_messages(request, chat_id: str):
    """Messages after `after` (live pushes, reconnect replay) or before `before` (older history)."""
    chat = _chat_or_404(request, chat_id)
    after, before = request.GET.get("after"), request.GET.get("before")
    if after is not None:
        after_id = 0 if after == "0" else parse_id(after)
        if after_id is None:
            return HttpResponse("`after` is a message id.", status=400, content_type="text/plain")
        context = {"messages": _view_messages(selectors.messages_after(chat, after_id), chat), "chat": chat}
        return render(request, "console/_messages.html", context)
    before_id = parse_id(before)
    if before_id is None:
        return HttpResponse("Give `after` or `before`, a message id.", status=400, content_type="text/plain")
    messages, has_older = selectors.messages_before(chat, before_id)
    context = {"messages": _view_messages(messages, chat), "chat": chat, "has_older": has_older}
    return render(request, "console/_older.html", context)


@never_cache
@require_GET
@operator_required
def chat_panel(request, chat_id: str):
    chat = _chat_or_404(request, chat_id)
    return render(request, "console/_panel.html", _panel_context(request, chat, **_confirmation(request)))


@require_POST
@operator_required
def seen(request, chat_id: str):
    """The operator has the chat in front of them: the visitor's messages up to the newest are seen
    (the read receipt of POST /v1/chats/{id}/seen, which the visitor's widget shows). 204; a spam
    chat, where the receipt refuses, changes nothing."""
    chat = _chat_or_404(request, chat_id)
    newest = selectors.newest_unseen_client_message(chat)
    if newest is not None:
        try:
            chat_services.mark_seen(widget=request.agent.widget, chat=chat, message=newest, by="agent")
        except AppError:
            pass  # a spam chat keeps its receipts as they are
    return HttpResponse(status=204)


# --- actions -------------------------------------------------------------------------------------------


def _back(chat: Chat) -> HttpResponseRedirect:
    return HttpResponseRedirect(reverse("console:chat", args=[chat.pk]), status=303)


def _refresh(response: HttpResponse, *events: str) -> HttpResponse:
    """Ask the page (htmx) to re-read what the action changed."""
    response["HX-Trigger"] = json.dumps(dict.fromkeys(events))
    return response


def _panel_answer(request, chat: Chat, *, error: AppError | str | None = None, status: int = 200, **extra):
    if isinstance(error, AppError):
        status, error = error.status, _refusal(error)
    if not request.htmx:
        if error is None:
            return _back(chat)
        return _chat_page(request, chat, status=status, panel={"panel_error": error, **extra})
    fresh = selectors.get_chat(agent=request.agent, chat_id=chat.pk) or chat
    response = render(
        request, "console/_panel.html", _panel_context(request, fresh, panel_error=error, **extra), status=status
    )
    return _refresh(response, "console:list", "console:messages") if error is None else response


@require_POST
@operator_required
def accept(request, chat_id: str):
    chat = _chat_or_404(request, chat_id)
    try:
        chat_services.accept_chat(widget=request.agent.widget, chat=chat, agent=request.agent)
    except AppError as err:
        return _panel_answer(request, chat, error=err)
    return _panel_answer(request, chat)


@require_POST
@operator_required
def transfer(request, chat_id: str):
    chat = _chat_or_404(request, chat_id)
    form = forms.TransferForm(request.POST, targets=selectors.transfer_targets(agent=request.agent))
    if not form.is_valid():
        message = " ".join(error for errors in form.errors.values() for error in errors)
        return _panel_answer(request, chat, error=message, status=422, transfer_form=form)
    try:
        chat_services.transfer_chat(
            widget=request.agent.widget, chat=chat, to_agent=form.cleaned_data["agent"], source="console"
        )
    except AppError as err:
        return _panel_answer(request, chat, error=err)
    return _panel_answer(request, chat)


@require_POST
@operator_required
def close(request, chat_id: str):
    chat = _chat_or_404(request, chat_id)
    try:
        chat_services.close_chat(widget=request.agent.widget, chat=chat)
    except AppError as err:
        return _panel_answer(request, chat, error=err)
    return _panel_answer(request, chat)


@require_POST
@operator_required
def mark_spam(request, chat_id: str):
    return _set_state(request, chat_id, Chat.Status.SPAM)


@require_POST
@operator_required
def not_spam(request, chat_id: str):
    """A spam chat back to active (the one move the state table allows out of spam)."""
    return _set_state(request, chat_id, Chat.Status.ACTIVE)


def _set_state(request, chat_id: str, state: str):
    chat = _chat_or_404(request, chat_id)
    try:
        chat_services.set_chat_state(widget=request.agent.widget, chat=chat, state=state)
    except AppError as err:
        return _panel_answer(request, chat, error=err)
    return _panel_answer(request, chat)


@require_POST
@operator_required
def rate_request(request, chat_id: str):
    chat = _chat_or_404(request, chat_id)
    try:
        chat_services.request_rating(widget=request.agent.widget, chat=chat)
    except AppError as err:
        return _panel_answer(request, chat, error=err)
    return _panel_answer(request, chat)


def _post_text(request, chat_id: str, *, form_class, visibility: str):
    chat = _chat_or_404(request, chat_id)
    prefix = "reply" if form_class is forms.ReplyForm else "note"
    form = form_class(request.POST, auto_id=f"{prefix}_%s")
    error, status = None, 200
    if form.is_valid():
        try:
            chat_services.post_agent_message(
                widget=request.agent.widget,
                chat=chat,
                agent=request.agent,
                data=chat_services.MessageInput(body=form.cleaned_data["body"], visibility=visibility),
                source="console",
            )
        except AppError as err:
            error, status = _refusal(err), err.status
        else:
            if not request.htmx:
                return _back(chat)
            form = form_class(auto_id=f"{prefix}_%s")
    else:
        status = 422
    key = "reply_form" if prefix == "reply" else "note_form"
    # A refused note keeps the composer on the note; anything else returns to the reply.
    composer = {key: form, "composer_error": error, "composer_mode": prefix if status != 200 else "reply"}
    if not request.htmx:  # a plain post that failed: the chat page with the form and its error
        return _chat_page(request, chat, status=status, composer=composer)
    response = render(request, "console/_composer.html", _composer_context(chat, **composer), status=status)
    return _refresh(response, "console:messages", "console:list", "console:panel") if status == 200 else response


@require_POST
@operator_required
def reply(request, chat_id: str):
    return _post_text(request, chat_id, form_class=forms.ReplyForm, visibility=Message.Visibility.PUBLIC)


@require_POST
@operator_required
def note(request, chat_id: str):
    return _post_text(request, chat_id, form_class=forms.NoteForm, visibility=Message.Visibility.NOTE)


@require_POST
@operator_required
def suggest(request, chat_id: str):
    """ "Suggest": the reply the AI would give (apps.ai.services.suggest_reply, the service of
    POST /v1/chats/{id}/suggest-reply) put into the reply box with its sources. Never sends."""
    chat = _chat_or_404(request, chat_id)
    error, status, text, sources = None, 200, "", []
    try:
        suggestion = ai_services.suggest_reply(widget=request.agent.widget, chat=chat)
    except AppError as err:
        error, status = _refusal(err), err.status
    else:
        text, sources = suggestion.text, suggestion.sources
    composer = {
        "reply_form": forms.ReplyForm(initial={"body": text}, auto_id="reply_%s"),
        "composer_error": error,
        "suggested_sources": sources,
    }
    if not request.htmx:
        return _chat_page(request, chat, status=status, composer=composer)
    return render(request, "console/_composer.html", _composer_context(chat, **composer), status=status)


@require_POST
@operator_required
def send_file(request, chat_id: str):
    """A file from the composer (multipart `file`): an image or a file message of the operator."""
    chat = _chat_or_404(request, chat_id)
    form = forms.FileForm(request.POST, request.FILES, auto_id="file_%s")
    error, status = None, 200
    if len(request.FILES.getlist("file")) > 1:
        error, status = _("Send one file at a time."), 422
    elif form.is_valid():
        try:
            services.send_file(agent=request.agent, chat=chat, upload=form.cleaned_data["file"])
        except AppError as err:
            error, status = _refusal(err), err.status
        else:
            if not request.htmx:
                return _back(chat)
            form = forms.FileForm(auto_id="file_%s")
    else:
        status = 422
    if not request.htmx:
        return _chat_page(request, chat, status=status, composer={"file_form": form, "composer_error": error})
    response = render(
        request, "console/_composer.html", _composer_context(chat, file_form=form, composer_error=error), status=status
    )
    return _refresh(response, "console:messages", "console:list", "console:panel") if status == 200 else response


@require_POST
@operator_required
def typing(request, chat_id: str):
    chat = _chat_or_404(request, chat_id)
    form = forms.TypingForm(request.POST)
    if not form.is_valid():
        return HttpResponse("`state` is start or stop.", status=422, content_type="text/plain")
    try:
        chat_services.note_typing(widget=request.agent.widget, chat=chat, state=form.cleaned_data["state"], by="agent")
    except AppError as err:
        return HttpResponse(err.detail, status=err.status, content_type="text/plain")
    return HttpResponse(status=204)


# --- canned responses (the composer's `/` picker) ------------------------------------------------------


@never_cache
@require_GET
@operator_required
def canned_picks(request):
    """JSON `{items: [{id, shortcut, title}]}` matching `q` (the text typed after `/`)."""
    q = (request.GET.get("q") or "").strip()[:100]
    rows = selectors.canned_picks(agent=request.agent, q=q)
    return JsonResponse({"items": [{"id": r.pk, "shortcut": r.shortcut, "title": r.title} for r in rows]})


@never_cache
@require_GET
@operator_required
def canned_render(request, chat_id: str, canned_id: str):
    """JSON `{text}`: the canned response rendered for this chat by the API's render service."""
    chat = _chat_or_404(request, chat_id)
    text = selectors.render_canned(agent=request.agent, chat=chat, canned_id=parse_id(canned_id) or 0)
    if text is None:
        raise Http404("No such canned response.")
    return JsonResponse({"text": text})
