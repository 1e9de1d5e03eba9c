"""The installable console (apps.console.pwa): the manifest, the service worker's script and the
offline page are public, carry nothing of an operator, keep the console's strict policy, and every
console page links them. Chromium's own checks (registration, installability, what the worker
caches, the phone layout) are in tests/browser/test_pwa.py."""

import json
import re
import struct

import pytest
from django.contrib.staticfiles import finders
from django.contrib.staticfiles.finders import FileSystemFinder
from django.utils import translation

from apps.console import pwa

pytestmark = pytest.mark.django_db

MANIFEST = "/console/manifest.webmanifest"
WORKER = "/console/sw.js"
OFFLINE = "/console/offline/"


def directives(response) -> dict[str, list[str]]:
    return {part.split()[0]: part.split()[1:] for part in response["Content-Security-Policy"].split("; ")}


def png_size(path: str) -> tuple[int, int]:
    data = open(finders.find(path.removeprefix("/static/")), "rb").read(24)
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", data[16:24])


def worker_constant(body: str, name: str):
    return json.loads(re.search(rf"^const {name} = (.+);$", body, re.MULTILINE).group(1))


def test_the_manifest_is_public_with_its_content_type(client):
    response = client.get(MANIFEST)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/manifest+json"
    manifest = json.loads(response.content)
    assert manifest["name"] == "Operator console" and manifest["short_name"]
    assert manifest["display"] == "standalone"
    assert manifest["id"] == manifest["start_url"] == manifest["scope"] == "/console/"
    assert manifest["theme_color"] == pwa.THEME_COLOR and manifest["background_color"]


def test_the_manifest_names_icons_of_192_and_512_pixels_plain_and_maskable(client):
    icons = json.loads(client.get(MANIFEST).content)["icons"]
    found = {(icon["sizes"], icon.get("purpose", "any")) for icon in icons}
    assert found == {("192x192", "any"), ("512x512", "any"), ("192x192", "maskable"), ("512x512", "maskable")}
    for icon in icons:
        assert icon["type"] == "image/png"
        width, height = png_size(icon["src"])
        assert f"{width}x{height}" == icon["sizes"], icon["src"]


def test_the_manifest_speaks_the_consoles_language(client):
    response = client.get(MANIFEST, headers={"Accept-Language": "ar"})
    manifest = json.loads(response.content)
    with translation.override("ar"):
        assert manifest["name"] == translation.gettext("Operator console")
    assert manifest["lang"] == "ar" and manifest["dir"] == "rtl"


def test_the_worker_is_served_from_the_consoles_root_as_javascript(client):
    response = client.get(WORKER)
    assert response.status_code == 200
    assert response["Content-Type"] == "text/javascript; charset=utf-8"
    # its folder is the manifest's scope, so the default scope covers the console without a
    # Service-Worker-Allowed header, and no cache keeps an old worker
    assert WORKER.rsplit("/", 1)[0] + "/" == json.loads(client.get(MANIFEST).content)["scope"]
    assert "Service-Worker-Allowed" not in response
    assert response["Cache-Control"] == "no-cache"


def test_the_worker_caches_the_shell_only(client):
    body = client.get(WORKER).content.decode()
    shell = worker_constant(body, "SHELL")
    assert "/static/console/console.css" in shell and "/static/console/console.js" in shell
    assert "/static/console/icons/icon-512.png" in shell and OFFLINE in shell
    assert all(url.startswith("/static/console/") for url in shell if url != OFFLINE)
    for url in shell[:-1]:
        assert finders.find(url.removeprefix("/static/")), url
    assert worker_constant(body, "STATIC_PREFIX") == "/static/console/"
    assert "/api/" not in body


def test_the_worker_leaves_room_for_push_handlers(client):
    body = client.get(WORKER).content.decode()
    assert "---- Web Push" in body and "---- end of Web Push" in body


def test_a_changed_static_file_is_a_new_worker(client, settings, tmp_path, monkeypatch):
    # Given the console's static files in a folder of the test
    (tmp_path / "console").mkdir()
    style = tmp_path / "console" / "console.css"
    style.write_text("body{color:black}")
    settings.STATICFILES_DIRS = [str(tmp_path)]
    settings.DEBUG = True  # read on each request, as in development
    monkeypatch.setattr(pwa.finders, "get_finders", lambda: [FileSystemFinder()])
    before = worker_constant(client.get(WORKER).content.decode(), "VERSION")
    assert worker_constant(client.get(WORKER).content.decode(), "VERSION") == before

    # When a deploy changes it, the worker's bytes change (the browser installs the new one)
    style.write_text("body{color:navy}")
    assert worker_constant(client.get(WORKER).content.decode(), "VERSION") != before


def test_the_offline_page_is_public_and_holds_nothing_of_the_operator(console, operator):
    response = console.get(OFFLINE)
    assert response.status_code == 200
    html = response.content.decode()
    assert "No connection" in html and 'href="/console/"' in html
    assert operator.name not in html and operator.user.email not in html
    assert "csrfmiddlewaretoken" not in html and "X-CSRFToken" not in html
    assert not response.cookies  # no session or CSRF cookie set by it either


@pytest.mark.parametrize("url", [MANIFEST, WORKER, OFFLINE])
def test_the_three_routes_keep_the_strict_policy_and_refuse_writes(client, url):
    response = client.get(url)
    policy = directives(response)
    assert policy["default-src"] == ["'none'"] and policy["script-src"] == ["'self'"]
    assert "'unsafe-inline'" not in response["Content-Security-Policy"]
    assert client.post(url).status_code == 405


def test_console_pages_allow_their_own_manifest_and_worker_only(console):
    policy = directives(console.get("/console/"))
    assert policy["manifest-src"] == ["'self'"] and policy["worker-src"] == ["'self'"]


@pytest.mark.parametrize("url", ["/console/login/", "/console/"])
def test_every_console_page_links_the_manifest_and_registers_the_worker(console, client, url):
    html = (console if url == "/console/" else client).get(url).content.decode()
    assert '<link rel="manifest" href="/console/manifest.webmanifest">' in html
    assert f'<meta name="theme-color" content="{pwa.THEME_COLOR}">' in html
    assert 'data-sw="/console/sw.js" data-scope="/console/"' in html
    assert re.search(r'<meta name="viewport" content="[^"]*interactive-widget=resizes-content', html)
