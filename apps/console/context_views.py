"""The chat page's context panel (the contact, their earlier chats, the chat's routing and notes)
and its contact edits: thin views over apps.chats.services.update_contact and add_tags, read by
the rules of the REST API's contact routes.

As the console's other actions: an htmx post gets the #context fragment back (422 with the
messages next to their fields when a value is refused, nothing changed then), a plain form post a
redirect back to the chat or the chat page with the errors.
"""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from apps.chats import services as chat_services
from apps.chats.models import Chat
from apps.core.errors import ValidationFailed

from . import forms, selectors, views
from .access import operator_required


@never_cache
@require_GET
@operator_required
def context_panel(request, chat_id: str):
    chat = views._chat_or_404(request, chat_id)
    return render(request, "console/_context.html", views.context_panel_context(chat))


def _answer(request, chat: Chat, *, key: str, form) -> HttpResponse:
    if form.errors:
        if not request.htmx:
            return views._chat_page(request, chat, status=422, context_forms={key: form})
        return render(request, "console/_context.html", views.context_panel_context(chat, **{key: form}), status=422)
    if not request.htmx:
        return views._back(chat)
    fresh = selectors.get_chat(agent=request.agent, chat_id=chat.pk) or chat
    response = render(request, "console/_context.html", views.context_panel_context(fresh, context_saved=True))
    # The chat's header and the list name the contact: let them re-read it.
    return views._refresh(response, "console:panel", "console:list")


def _update(request, chat_id: str, *, key: str, form_class) -> HttpResponse:
    chat = views._chat_or_404(request, chat_id)
    form = form_class(request.POST, contact=chat.contact)
    if form.is_valid() and form.changes:
        try:
            chat_services.update_contact(
                widget=request.agent.widget, contact=chat.contact, changes=form.changes, source="console"
            )
        except ValidationFailed as err:  # the merged attributes would be too large
            form.add_api_errors(err)
    return _answer(request, chat, key=key, form=form)


@require_POST
@operator_required
def edit_contact(request, chat_id: str):
    """Name, e-mail and phone (PATCH /v1/contacts/{id}'s rules)."""
    return _update(request, chat_id, key="contact_form", form_class=forms.ContactForm)


@require_POST
@operator_required
def set_attribute(request, chat_id: str):
    """One custom attribute added or changed."""
    return _update(request, chat_id, key="attribute_form", form_class=forms.AttributeForm)


@require_POST
@operator_required
def remove_attribute(request, chat_id: str):
    """One custom attribute removed (an absent key changes nothing)."""
    return _update(request, chat_id, key="remove_form", form_class=forms.RemoveAttributeForm)


@require_POST
@operator_required
def add_tags(request, chat_id: str):
    """Tags attached (POST /v1/contacts/{id}/tags's rules); an existing tag is a no-op."""
    chat = views._chat_or_404(request, chat_id)
    form = forms.TagsForm(request.POST, contact=chat.contact)
    if form.is_valid():
        chat_services.add_tags(widget=request.agent.widget, contact=chat.contact, names=form.changes["tags"])
    return _answer(request, chat, key="tags_form", form=form)
