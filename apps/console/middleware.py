"""The console's language: Django's own choice (the language cookie the console's switcher sets, else
the browser's Accept-Language, else LANGUAGE_CODE) among settings.LANGUAGES, active while a console
request is served.

Only paths under /console/ are translated: the API, the visitor API and their problem+json texts stay
English whatever the caller's Accept-Language (Django's LocaleMiddleware, site-wide, would activate
DRF's and Django's own catalogues for every API error).
"""

from __future__ import annotations

from django.utils import translation
from django.utils.cache import patch_vary_headers

CONSOLE_PREFIX = "/console/"


class ConsoleLocaleMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not request.path_info.startswith(CONSOLE_PREFIX):
            return self.get_response(request)
        with translation.override(translation.get_language_from_request(request)):
            request.LANGUAGE_CODE = translation.get_language()
            response = self.get_response(request)
        # The page depends on the cookie and the header: no shared cache may serve it across them.
        patch_vary_headers(response, ("Accept-Language", "Cookie"))
        response.headers.setdefault("Content-Language", request.LANGUAGE_CODE)
        return response
