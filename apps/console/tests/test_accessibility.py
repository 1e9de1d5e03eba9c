"""Accessibility of the console's pages, checked on the HTML they serve: every form control has an
accessible name (a <label for>, a wrapping <label>, aria-label or aria-labelledby), every button
has text or a label, the page has a language, one h1, and live regions announce what the socket
changes."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from apps.chats import services as chat_services

pytestmark = pytest.mark.django_db

CONTROLS = {"input", "select", "textarea"}
UNNAMED_TYPES = {"hidden", "submit", "button", "reset", "image"}


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.controls: list[dict] = []
        self.label_for: set[str] = set()
        self.ids: set[str] = set()
        self.buttons: list[dict] = []
        self.open_labels = 0
        self.open_button: dict | None = None
        self.h1 = 0
        self.html_lang = None
        self.live_regions: list[dict] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "html":
            self.html_lang = a.get("lang")
        if tag == "h1":
            self.h1 += 1
        if tag == "label":
            self.open_labels += 1
            if a.get("for"):
                self.label_for.add(a["for"])
        if "aria-live" in a or a.get("role") in {"status", "alert", "log"}:
            self.live_regions.append(a)
        if tag in CONTROLS and a.get("type") not in UNNAMED_TYPES:
            self.controls.append({**a, "_tag": tag, "_wrapped": self.open_labels > 0})
        if tag == "button":
            self.open_button = {**a, "_text": ""}
            self.buttons.append(self.open_button)

    def handle_endtag(self, tag):
        if tag == "label" and self.open_labels:
            self.open_labels -= 1
        if tag == "button":
            self.open_button = None

    def handle_data(self, data):
        if self.open_button is not None:
            self.open_button["_text"] += data.strip()


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    return page


def unnamed_controls(page: Page) -> list[dict]:
    return [
        c
        for c in page.controls
        if not (
            c["_wrapped"]
            or c.get("aria-label")
            or c.get("aria-labelledby")
            or (c.get("id") and c["id"] in page.label_for)
        )
    ]


@pytest.fixture
def waiting_chat(widget, chat):
    return chat_services.await_human(widget=widget, chat=chat, reason="ai_handoff")


@pytest.mark.parametrize("where", ["list", "chat", "login"])
def test_every_control_and_button_has_an_accessible_name(console, chat, waiting_chat, where):
    from django.test import Client

    path = {"list": "/console/", "chat": f"/console/chats/{chat.pk}/", "login": "/console/login/"}[where]
    client = Client() if where == "login" else console
    response = client.get(path)
    assert response.status_code == 200
    page = parse(response.content.decode())
    assert page.controls, "the page has form controls to check"
    assert unnamed_controls(page) == []
    assert [b for b in page.buttons if not (b["_text"] or b.get("aria-label"))] == []
    assert page.html_lang
    if where != "list":
        assert page.h1 == 1


def test_the_chat_page_announces_what_the_socket_changes(console, chat):
    page = parse(console.get(f"/console/chats/{chat.pk}/").content.decode())
    assert page.live_regions, "a live region (aria-live / role=status|log|alert) announces changes"


def test_labels_point_at_existing_controls(console, chat):
    page = parse(console.get(f"/console/chats/{chat.pk}/").content.decode())
    assert page.label_for <= page.ids
