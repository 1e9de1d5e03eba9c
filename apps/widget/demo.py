"""The demo page `/demo/`: a plain host page carrying a widget's embed snippet, so a newcomer sees the
widget on a page in one minute. Without a parameter it shows the widget `manage.py seed_demo` makes
(what `make run` seeds); `?guid=<button_guid>` shows any widget (an owner tries their own: the guid
is public, it is in every page the snippet is on).

Not part of the API: no token, nothing written. Without a seeded demo widget, or for an unknown guid,
it answers 404.
"""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_safe

from apps.core import selectors as core_selectors

from . import selectors

GUID_MAX = 32  # Widget.button_guid's length


@require_safe
def demo_page(request):
    guid = request.GET.get("guid")
    if guid is not None:
        widget = core_selectors.get_widget_by_button_guid(button_guid=guid) if 0 < len(guid) <= GUID_MAX else None
        if widget is None:
            raise Http404("No widget with this guid.")
    else:
        widget = selectors.get_demo_widget()
        if widget is None:
            raise Http404("No demo widget: run `manage.py seed_demo` (make run does).")
    embed = selectors.embed_payload(widget, origin=f"{request.scheme}://{request.get_host()}")
    return render(request, "widget/demo.html", {"widget": widget, "embed": embed, "seeded": guid is None})
