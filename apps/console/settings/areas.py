"""The settings' areas, in the order an owner meets them, and the embed snippet they all show."""

from __future__ import annotations

from dataclasses import dataclass

from django.urls import NoReverseMatch, reverse
from django.utils.translation import gettext_lazy as _

from apps.widget import selectors
from apps.widget.models import Widget


@dataclass(frozen=True)
class Area:
    slug: str
    title: str
    summary: str
    url_name: str


AREAS = (
    Area(
        "widget",
        _("Widget"),
        _("Look, texts, languages, hours, forms and the embed snippet."),
        "console:settings:widget",
    ),
    Area("people", _("People"), _("Operators, departments, routing and SLA policies."), "console:settings:people"),
    Area("replies", _("Replies"), _("Canned responses your operators insert."), "console:settings:replies"),
    Area("labels", _("Labels"), _("Labels operators put on chats to sort them."), "console:settings:labels"),
    Area("macros", _("Macros"), _("Several actions on a chat in one click."), "console:settings:macros"),
    Area(
        "automation",
        _("Automation"),
        _("Rules that label, route, answer, close or tell your tools by themselves."),
        "console:settings:automation",
    ),
    Area("ai", _("AI"), _("The AI operator, its credentials and its knowledge base."), "console:settings:ai"),
    Area("channels", _("Channels"), _("Messengers and your own channels."), "console:settings:channels"),
    Area("developers", _("Developers"), _("API tokens and webhooks."), "console:settings:developers"),
    Area("data", _("Data"), _("Contacts, retention and the audit log."), "console:settings:data"),
)


def menu(*, current: str) -> list[dict]:
    """The areas whose pages are installed (an area's URL reverses), the current one marked."""
    items = []
    for area in AREAS:
        try:
            url = reverse(area.url_name)
        except NoReverseMatch:
            continue
        items.append(
            {
                "slug": area.slug,
                "title": area.title,
                "summary": area.summary,
                "url": url,
                "current": area.slug == current,
            }
        )
    return items


def embed_snippet(request, widget: Widget) -> str:
    """The one line a site owner pastes before </body>, as `GET /api/v1/widget/embed` hands it out."""
    return selectors.embed_payload(widget, origin=f"{request.scheme}://{request.get_host()}")["snippet"]
