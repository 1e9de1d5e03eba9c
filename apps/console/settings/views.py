"""The settings' front page: where each area is, and the widget's embed snippet."""

from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from . import areas
from .access import owner_required


def settings_context(request, *, area: str, **extra) -> dict:
    """The context every settings page renders with: the console's header and the areas' menu."""
    from ..views import page_context

    return page_context(
        request, settings_page=True, settings_area=area, settings_areas=areas.menu(current=area), **extra
    )


@never_cache
@owner_required
@require_GET
def index(request):
    return render(
        request,
        "console/settings/index.html",
        settings_context(request, area="", snippet=areas.embed_snippet(request, request.agent.widget)),
    )
