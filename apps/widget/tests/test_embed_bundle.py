"""The committed widget build (apps/widget/static/widget/, built by `make widget` from
frontend/widget) and the demo page."""

from __future__ import annotations

import gzip
import hashlib
import re
from pathlib import Path

import pytest
from django.core.management import call_command

from apps.widget import selectors
from apps.widget.management.commands import seed_demo

STATIC = Path(__file__).resolve().parents[1] / "static" / "widget"
LOADER_MAX_GZIP = 2 * 1024
WIDGET_MAX_GZIP = 30 * 1024


def gzipped(name: str) -> int:
    return len(gzip.compress((STATIC / name).read_bytes(), compresslevel=9, mtime=0))


def test_the_loader_is_at_most_2_kb_gzipped():
    assert gzipped("loader.js") <= LOADER_MAX_GZIP


def test_the_widget_is_at_most_30_kb_gzipped():
    assert gzipped("widget.js") <= WIDGET_MAX_GZIP


def test_the_loader_names_the_committed_widget_build():
    # The `?v=` of widget.js is its content hash: a loader from another build would load a stale widget
    loader = (STATIC / "loader.js").read_text()
    version = hashlib.sha256((STATIC / "widget.js").read_bytes()).hexdigest()[:12]
    assert re.findall(r"/static/widget/widget\.js\?v=([0-9a-f]+)", loader) == [version]


def test_the_embed_snippet_points_at_the_committed_loader():
    assert selectors.EMBED_SCRIPT_PATH == "/static/widget/loader.js"
    assert (STATIC / "loader.js").is_file()


def test_the_demo_constants_are_those_of_seed_demo():
    assert (selectors.DEMO_OWNER_EMAIL, selectors.DEMO_WIDGET_NAME) == (seed_demo.DEMO_EMAIL, seed_demo.DEMO_WIDGET)


@pytest.mark.django_db
def test_the_demo_page_is_404_without_a_seeded_widget(client):
    assert client.get("/demo/").status_code == 404


@pytest.mark.django_db
def test_the_demo_page_carries_the_embed_snippet_of_the_seeded_widget(client, capsys):
    call_command("seed_demo")
    widget = selectors.get_demo_widget()

    response = client.get("/demo/")

    assert response.status_code == 200
    snippet = f'<script src="http://testserver/static/widget/loader.js?guid={widget.button_guid}" async></script>'
    assert snippet in response.content.decode()
    assert client.post("/demo/").status_code == 405
