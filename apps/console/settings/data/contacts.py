"""The owner's contacts: the list with the API's search, a contact's page (its details, attributes,
tags and chats), its export and its erasure.

Edits are read by the rules of PATCH /v1/contacts/{id} and POST /v1/contacts/{id}/tags through the
console's contact forms (the inbox's side panel uses the same ones) and written by apps.chats.services;
the export is the API's document under the same cap on exports in flight; the erasure goes through
apps.privacy.services.request_contact_erasure. A guid of another widget, a missing one and one being
erased are 404 on every page.
"""

from __future__ import annotations

from datetime import datetime

from django.contrib import messages
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.chats import selectors as chats
from apps.chats import services as chat_services
from apps.chats.api.serializers import ContactListQuery
from apps.chats.models import Contact
from apps.core import exports
from apps.core.api.pagination import open_cursor, seal_cursor
from apps.core.errors import AppError, NotFound, ValidationFailed
from apps.privacy import selectors as privacy
from apps.privacy import services as privacy_services

from ... import forms as console_forms
from .. import forms as settings_forms
from ..access import owner_required
from ..views import settings_context
from . import forms

PAGE_SIZE = 25


def _context(request, **extra) -> dict:
    return settings_context(request, area="data", data_tab="contacts", **extra)


def _contact_or_404(request, guid: str) -> Contact:
    contact = chats.get_live_contact(widget=request.agent.widget, guid=guid)
    if contact is None:
        raise Http404
    return contact


def display_name(contact: Contact) -> str:
    return contact.name or contact.email or contact.phone or _("Unnamed visitor")


# --- the list -------------------------------------------------------------------------------------------


def _cursor_context(request) -> str:
    return f"console:settings:data-contacts:widget:{request.agent.widget.pk}"


@never_cache
@owner_required
@require_GET
def contact_list(request):
    """Contacts, newest first, a page at a time (a keyset cursor, like GET /v1/contacts)."""
    form = forms.SearchForm(request.GET)
    form.is_valid()
    text = form.cleaned_data.get("query", "")
    query, status = None, 200
    if text:
        validated, refused = settings_forms.validate(ContactListQuery, {"query": text})
        if refused is None:
            query = validated.get("query") or None
        else:
            settings_forms.bind(form, refused)
            status = refused.status
    after = None
    raw = request.GET.get("cursor")
    if raw and status == 200:
        try:
            created_at, pk = open_cursor(raw, context=_cursor_context(request))
            after = [datetime.fromisoformat(created_at), int(pk)]
        except (ValueError, TypeError):
            form.add_error(None, _("This page of the list is no longer valid: start again from the first page."))
            status = 422
    rows = (
        []
        if status != 200
        else chats.list_contacts(widget=request.agent.widget, query=query, after=after, limit=PAGE_SIZE + 1)
    )
    next_cursor = None
    if len(rows) > PAGE_SIZE:
        rows = rows[:PAGE_SIZE]
        last = rows[-1]
        next_cursor = seal_cursor([last.created_at.isoformat(), last.pk], context=_cursor_context(request))
    return render(
        request,
        "console/settings/data/contacts.html",
        _context(
            request,
            form=form,
            query=text if status == 200 else "",
            contacts=[{"contact": c, "name": display_name(c)} for c in rows],
            next_cursor=next_cursor,
            paged=bool(raw) and status == 200,
        ),
        status=status,
    )


# --- a contact's page -----------------------------------------------------------------------------------


def _contact_page(request, contact: Contact, *, status: int = 200, **forms_given) -> HttpResponse:
    page_forms = {
        "contact_form": console_forms.ContactForm(contact=contact),
        "attribute_form": console_forms.AttributeForm(contact=contact),
        "tags_form": console_forms.TagsForm(contact=contact),
        **forms_given,
    }
    return render(
        request,
        "console/settings/data/contact.html",
        _context(
            request,
            contact=contact,
            name=display_name(contact),
            tags=sorted(contact.tags.values_list("name", flat=True)),
            attributes=sorted(contact.attributes.items()),
            chats=list(chats.list_contact_chats(widget=request.agent.widget, contact=contact)[:50]),
            **page_forms,
        ),
        status=status,
    )


def _back(contact: Contact) -> HttpResponse:
    return redirect(reverse("console:settings:data-contact", args=[contact.guid]), permanent=False)


def _see_other(contact: Contact) -> HttpResponse:
    response = _back(contact)
    response.status_code = 303
    return response


@never_cache
@owner_required
@require_GET
def contact_detail(request, guid: str):
    return _contact_page(request, _contact_or_404(request, guid))


def _update(request, guid: str, *, key: str, form_class) -> HttpResponse:
    contact = _contact_or_404(request, guid)
    form = form_class(request.POST, contact=contact)
    if form.is_valid() and form.changes:
        try:
            chat_services.update_contact(
                widget=request.agent.widget, contact=contact, changes=form.changes, source="console"
            )
        except ValidationFailed as err:  # the merged attributes would be too large
            form.add_api_errors(err)
    if form.errors:
        return _contact_page(request, contact, status=422, **{key: form})
    messages.success(request, _("Saved."))
    return _see_other(contact)


@owner_required
@require_POST
def edit_contact(request, guid: str):
    """Name, e-mail and phone (PATCH /v1/contacts/{id}'s rules)."""
    return _update(request, guid, key="contact_form", form_class=console_forms.ContactForm)


@owner_required
@require_POST
def set_attribute(request, guid: str):
    """One attribute added or changed (PATCH /v1/contacts/{id}'s `attributes` merge)."""
    return _update(request, guid, key="attribute_form", form_class=console_forms.AttributeForm)


@owner_required
@require_POST
def remove_attribute(request, guid: str):
    """One attribute removed (the API's `{"key": null}`)."""
    return _update(request, guid, key="attribute_form", form_class=console_forms.RemoveAttributeForm)


@owner_required
@require_POST
def add_tags(request, guid: str):
    """Tags attached (POST /v1/contacts/{id}/tags's rules); an existing tag is a no-op."""
    contact = _contact_or_404(request, guid)
    form = console_forms.TagsForm(request.POST, contact=contact)
    if not form.is_valid():
        return _contact_page(request, contact, status=422, tags_form=form)
    chat_services.add_tags(widget=request.agent.widget, contact=contact, names=form.changes["tags"])
    messages.success(request, _("Saved."))
    return _see_other(contact)


@owner_required
@require_POST
def remove_tag(request, guid: str):
    """One tag detached; a tag the contact does not carry changes nothing."""
    contact = _contact_or_404(request, guid)
    name = request.POST.get("tag", "")
    chat_services.remove_tag(widget=request.agent.widget, contact=contact, name=name)
    messages.success(request, _("Tag removed."))
    return _see_other(contact)


# --- export and erasure ---------------------------------------------------------------------------------


@never_cache
@owner_required
@require_GET
def export(request, guid: str):
    """The API's export document (GET /v1/contacts/{id}/export) as a download, under the same cap on
    a widget's exports in flight."""
    contact = _contact_or_404(request, guid)
    try:
        slot = exports.admit(
            privacy.CONTACT_EXPORTS, request.agent.widget.pk, retry_after=privacy.CONTACT_EXPORT_RETRY_AFTER_SECONDS
        )
    except AppError as err:
        response = _contact_page(request, contact, status=err.status, export_refusal=err.detail)
        for header, value in err.headers.items():
            response[header] = value
        return response
    chunks = (chunk.encode() for chunk in privacy.export_contact(contact=contact))
    body = exports.Holding(chunks, slots=privacy.CONTACT_EXPORTS, slot=slot, request=request)
    response = StreamingHttpResponse(body, content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="contact-{contact.guid}.json"'
    return response


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def erase(request, guid: str):
    """GET: what the erasure removes, named and counted; POST: the erasure, as POST
    /v1/contacts/{id}/erase accepts it (the worker then deletes)."""
    contact = _contact_or_404(request, guid)
    if request.method == "POST":
        outcome = settings_forms.perform(
            lambda: privacy_services.request_contact_erasure(widget=request.agent.widget, contact=contact)
        )
        if outcome.refused:
            if outcome.code == NotFound.code:
                raise Http404
            messages.error(request, outcome.message)
            return _see_other(contact)
        messages.success(request, _("The erasure has started: the contact no longer shows anywhere."))
        response = redirect("console:settings:data")
        response.status_code = 303
        return response
    return render(
        request,
        "console/settings/data/erase.html",
        _context(request, contact=contact, name=display_name(contact), counts=privacy.erasure_counts(contact=contact)),
    )
