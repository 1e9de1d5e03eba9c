"""The console's Content-Security-Policy: its pages run only the scripts and styles it serves
itself (htmx and console.js as files, no inline script, no eval: htmx's `allowEval` and
`allowScriptTags` are off in base.html), so an injected tag or attribute runs nothing.

Django 5.2 has no CSP mechanism of its own, and the rest of the site (admin, the API docs with
their inline boot script) keeps its own headers, so the policy is set here on the console's
responses only (those whose URL resolved in the `console` namespace).
"""

from __future__ import annotations

from django.conf import settings


def console_policy() -> str:
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
            "frame-ancestors 'none'",
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
        if match is not None and match.namespace == "console" and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = console_policy()
        return response
