"""The demo page `/demo/`: a plain host page carrying the embed snippet of the widget `manage.py
seed_demo` makes (what `make run` seeds), so a newcomer sees the widget on a page in one minute.

Not part of the API: no token, nothing written. Without a seeded demo widget it answers 404.
"""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_safe

from . import selectors


@require_safe
def demo_page(request):
    widget = selectors.get_demo_widget()
    if widget is None:
        raise Http404("No demo widget: run `manage.py seed_demo` (make run does).")
    embed = selectors.embed_payload(widget, origin=f"{request.scheme}://{request.get_host()}")
    return render(request, "widget/demo.html", {"widget": widget, "embed": embed})
