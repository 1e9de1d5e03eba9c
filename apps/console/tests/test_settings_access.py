"""Who reaches the owner's settings pages: the widget's owner; an operator gets 403 on every one of
them, whatever the method; a visitor without a session goes to the sign-in page."""

import re

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from apps.audit.models import AuditEntry

pytestmark = pytest.mark.django_db


def settings_paths() -> list[str]:
    """Every page under /console/settings/, its ids filled with 1."""
    found = []

    def walk(patterns, prefix):
        for entry in patterns:
            pattern = str(entry.pattern)
            pattern = re.sub(r"\(\?P<\w+>[^)]*\)", "1", pattern).replace("^", "").replace("$", "")
            pattern = re.sub(r"<(?:int:)?\w+>", "1", pattern)
            if isinstance(entry, URLResolver):
                walk(entry.url_patterns, prefix + pattern)
            elif isinstance(entry, URLPattern):
                found.append(prefix + pattern)

    for entry in get_resolver().url_patterns:
        if isinstance(entry, URLResolver) and str(entry.pattern) == "console/":
            for inner in entry.url_patterns:
                if isinstance(inner, URLResolver) and str(inner.pattern) == "settings/":
                    walk(inner.url_patterns, "/console/settings/")
    return found


def test_the_owner_sees_the_areas_and_the_embed_snippet(owner_console, widget):
    response = owner_console.get("/console/settings/")
    assert response.status_code == 200
    page = response.content.decode()
    assert widget.button_guid in page and "&lt;script src=" in page
    assert "Content-Security-Policy" in response


def test_the_header_offers_settings_to_the_owner_only(owner_console, console):
    assert 'href="/console/settings/"' in owner_console.get("/console/").content.decode()
    assert 'href="/console/settings/"' not in console.get("/console/").content.decode()


def test_an_operator_gets_403_on_every_settings_page(console):
    paths = settings_paths()
    assert "/console/settings/" in paths
    for path in paths:
        for method in ("get", "post"):
            response = getattr(console, method)(path)
            assert response.status_code == 403, (method, path, response.status_code)
    assert not AuditEntry.objects.exists()


def test_without_a_session_every_settings_page_goes_to_sign_in(client):
    for path in settings_paths():
        response = client.get(path)
        assert response.status_code == 302 and response.url.startswith("/console/login/"), path
