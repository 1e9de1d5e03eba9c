"""Two middlewares of the console's pages.

The console's language: Django's own choice (the language cookie the console's switcher sets, else
the browser's Accept-Language, else LANGUAGE_CODE) among settings.LANGUAGES, active while a console
request is served.

Only the console's pages are translated (paths under /console/, /setup/, the first-run page that
leads into it, and /invite/, the invitation page that does): the API, the visitor API and their problem+json texts stay
English whatever the caller's Accept-Language (Django's LocaleMiddleware, site-wide, would activate
DRF's and Django's own catalogues for every API error).

The console's Content-Security-Policy: its pages run only the scripts and styles it serves
itself (htmx and console.js as files, no inline script, no eval: htmx's `allowEval` and
`allowScriptTags` are off in base.html), so an injected tag or attribute runs nothing.

Django 5.2 has no CSP mechanism of its own, and the rest of the site (admin, the API docs with
their inline boot script) keeps its own headers, so the policy is set here on the console's
responses only (those whose URL resolved in the `console` namespace or one nested in it, and the
first-run page's `setup` namespace).
"""

from __future__ import annotations

from django.conf import settings
from django.utils import translation
from django.utils.cache import patch_vary_headers

CONSOLE_PREFIX = "/console/"
# The paths the console's language covers: the console, its first-run page (apps.console.setup) and
# the invitation a new operator opens before their first sign-in (apps.console.invite).
TRANSLATED_PREFIXES = (CONSOLE_PREFIX, "/setup/", "/invite/")
# The URL namespaces whose pages carry the console's policy.
POLICY_NAMESPACES = ("console", "setup")


class ConsoleLocaleMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not request.path_info.startswith(TRANSLATED_PREFIXES):
            return self.get_response(request)
        with translation.override(translation.get_language_from_request(request)):
            request.LANGUAGE_CODE = translation.get_language()
            response = self.get_response(request)
        # The page depends on the cookie and the header: no shared cache may serve it across them.
        patch_vary_headers(response, ("Accept-Language", "Cookie"))
        response.headers.setdefault("Content-Language", request.LANGUAGE_CODE)
        return response


def console_policy(*, frame_src: str = "", frame_ancestors: str = "'none'") -> str:
    """The policy of a console page. No page frames anything nor is framed, except the widget
    builder's pair: the builder shows its live preview (`frame_src="'self'"`) and the preview page
    is framed by the console itself (`frame_ancestors="'self'"`); their views set the header."""
    images = " ".join(["'self'", "data:", *settings.CONSOLE_CSP_IMG_SOURCES])
    return "; ".join(
        [
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            f"img-src {images}",
            "connect-src 'self'",  # the console's fetches and its operator websocket (same host)
            "font-src 'self'",
            "form-action 'self'",
            "manifest-src 'self'",  # the installable console's manifest (apps.console.pwa)
            "worker-src 'self'",  # and its service worker
            *([f"frame-src {frame_src}"] if frame_src else []),
            f"frame-ancestors {frame_ancestors}",
            "base-uri 'none'",
            "object-src 'none'",
        ]
    )


class ConsoleContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        if (
            match is not None
            and match.namespaces[:1]
            and match.namespaces[0] in POLICY_NAMESPACES
            and "Content-Security-Policy" not in response
        ):
            response["Content-Security-Policy"] = console_policy()
        return response
