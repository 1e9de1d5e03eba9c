"""The console's Content-Security-Policy (apps.console.middleware): its own scripts and styles as
files only, no inline script, no eval; htmx configured not to evaluate anything."""

import json
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.django_db

TEMPLATES = Path(__file__).resolve().parents[1] / "templates" / "console"


def directives(response) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    return {part.split()[0]: part.split()[1:] for part in header.split("; ")}


def test_console_pages_carry_a_strict_policy(console, chat):
    for url in ("/console/", f"/console/chats/{chat.pk}/", f"/console/chats/{chat.pk}/panel/"):
        response = console.get(url)
        assert response.status_code == 200, url
        policy = directives(response)
        assert policy["default-src"] == ["'none'"]
        assert policy["script-src"] == ["'self'"] and policy["style-src"] == ["'self'"]
        assert policy["frame-ancestors"] == ["'none'"] and policy["base-uri"] == ["'none'"]
        assert "'unsafe-inline'" not in response["Content-Security-Policy"]
        assert "'unsafe-eval'" not in response["Content-Security-Policy"]


def test_the_login_page_and_its_redirects_carry_it(client):
    assert "script-src 'self'" in client.get("/console/login/")["Content-Security-Policy"]
    assert "Content-Security-Policy" in client.get("/console/")  # the redirect to the sign-in


def test_other_routes_keep_their_own_headers(client, widget):
    assert "Content-Security-Policy" not in client.get("/healthz")
    assert "Content-Security-Policy" not in client.get("/api/v1/schema")


def test_extra_image_origins_come_from_the_setting(console, settings):
    settings.CONSOLE_CSP_IMG_SOURCES = ["https://files.example-cdn.net"]
    assert directives(console.get("/console/"))["img-src"] == ["'self'", "data:", "https://files.example-cdn.net"]


def test_htmx_evaluates_nothing_and_injects_no_styles():
    html = (TEMPLATES / "base.html").read_text()
    config = json.loads(re.search(r"""<meta name="htmx-config" content='([^']+)'>""", html).group(1))
    assert config["allowEval"] is False and config["allowScriptTags"] is False
    assert config["includeIndicatorStyles"] is False


@pytest.mark.parametrize("template", sorted(p.name for p in TEMPLATES.glob("*.html")))
def test_templates_hold_no_inline_script_style_or_handler(template):
    html = (TEMPLATES / template).read_text()
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), "inline <script>"
    assert not re.search(r"<style\b", html) and not re.search(r"\sstyle=", html), "inline style"
    assert not re.search(r"\son[a-z]+=", html), "inline event handler"
    assert "hx-on" not in html and "js:" not in html, "htmx evaluation"
