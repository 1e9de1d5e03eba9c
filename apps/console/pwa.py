"""The installable console: its web app manifest, its service worker and the page it shows offline.

All three are public (no sign-in) and the same for everyone: they say nothing about an operator.
The service worker lives at /console/sw.js, so its default scope is the console (/console/) and no
Service-Worker-Allowed header is needed. It keeps the shell only (the console's CSS, scripts, icons
and the offline page), never an API answer, a chat or the HTML of a signed-in page: see
templates/console/sw.js.

A deploy that changes a file of the shell changes `shell_version()`, hence the bytes of sw.js: the
browser installs the new worker, which fetches the new shell and drops the old cache. Static files
keep their names across deploys here (whitenoise's compressed storage, no content hash), so the
version is what keeps a cached stylesheet from outliving its page.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache

from django.conf import settings
from django.contrib.staticfiles import finders
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.template.loader import get_template
from django.templatetags.static import static
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

# The static files the console's base template loads on every page, and its icons: fetched when
# the worker installs. Other files under console/ (an area's own CSS or script) join on first use.
SHELL_FILES = (
    "console/console.css",
    "console/labels.css",
    "console/mentions.css",
    "console/htmx.min.js",
    "console/console.js",
    "console/mentions.js",
    "console/pwa.js",
    "console/favicon.svg",
    "console/icons/icon-192.png",
    "console/icons/icon-512.png",
    "console/icons/maskable-192.png",
    "console/icons/maskable-512.png",
    "console/icons/apple-touch-icon.png",
)
# The colours of the installed app (console.css's --color-accent and --color-bg).
THEME_COLOR = "#1f5fd1"
BACKGROUND_COLOR = "#f4f5f7"


def _shell_digest() -> str:
    digest = hashlib.sha256()
    for finder in finders.get_finders():
        for path, storage in sorted(finder.list([]), key=lambda item: item[0]):
            if not path.startswith("console/"):
                continue
            digest.update(path.encode())
            with storage.open(path) as handle:
                digest.update(handle.read())
    # the offline page is cached as well: a change of its words is a new shell
    digest.update(get_template("console/offline.html").template.source.encode())
    return digest.hexdigest()[:16]


_cached_digest = cache(_shell_digest)


def shell_version() -> str:
    """A digest of the console's static files and its offline page (read once per process; under
    DEBUG on every call, so an edited file reaches the browser without a restart)."""
    return _shell_digest() if settings.DEBUG else _cached_digest()


def _icons() -> list[dict[str, str]]:
    icons = []
    for size in (192, 512):
        icons.append({"src": static(f"console/icons/icon-{size}.png"), "sizes": f"{size}x{size}", "type": "image/png"})
        icons.append(
            {
                "src": static(f"console/icons/maskable-{size}.png"),
                "sizes": f"{size}x{size}",
                "type": "image/png",
                "purpose": "maskable",
            }
        )
    return icons


@require_GET
def manifest(request):
    """The web app manifest (W3C Web Application Manifest), in the console's language."""
    home = reverse("console:chats")
    body = {
        "id": home,
        "name": _("Operator console"),
        "short_name": _("Console"),
        "description": _("Answer your website's visitors from any device."),
        "lang": translation.get_language(),
        "dir": "rtl" if translation.get_language_bidi() else "ltr",
        "start_url": home,
        "scope": home,
        "display": "standalone",
        "background_color": BACKGROUND_COLOR,
        "theme_color": THEME_COLOR,
        "icons": _icons(),
    }
    response = JsonResponse(body, content_type="application/manifest+json", json_dumps_params={"ensure_ascii": False})
    response["Cache-Control"] = "no-cache"
    return response


@require_GET
def service_worker(request):
    """The service worker's script. `no-cache`: browsers look for a new one on each visit anyway,
    and no cache between them should hold an old one."""
    shell = [static(path) for path in SHELL_FILES] + [reverse("console:offline")]
    context = {
        "version": json.dumps(shell_version()),
        "shell": json.dumps(shell),
        "static_prefix": json.dumps(static("console/")),
        "offline_url": json.dumps(reverse("console:offline")),
    }
    response = HttpResponse(
        get_template("console/sw.js").render(context), content_type="text/javascript; charset=utf-8"
    )
    response["Cache-Control"] = "no-cache"
    return response


@require_GET
def offline(request):
    """What the installed console shows when a page cannot be fetched: a sentence and a way to try
    again. It is cached by the service worker, so it holds nothing of the person who installed it."""
    return render(request, "console/offline.html", {"theme_color": THEME_COLOR})
