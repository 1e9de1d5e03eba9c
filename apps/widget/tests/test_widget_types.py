"""The JavaScript API's TypeScript declarations (frontend/widget/src/chat-widget.d.ts, copied by the
build beside the loader): they name every call the loader offers and every event the embedding guide
lists, and the served copy is the source's. Read with regular expressions: no TypeScript compiler."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SOURCE = ROOT / "frontend" / "widget" / "src" / "chat-widget.d.ts"
SERVED = ROOT / "apps" / "widget" / "static" / "widget" / "chat-widget.d.ts"
LOADER = ROOT / "frontend" / "widget" / "src" / "loader.js"
GUIDE = ROOT / "docs" / "integrating" / "widget.md"


def block(text: str, opening: str) -> str:
    """The text inside the braces that follow `opening` (nested braces counted)."""
    start = text.index(opening)
    depth, at = 0, text.index("{", start)
    for index in range(at, len(text)):
        depth += {"{": 1, "}": -1}.get(text[index], 0)
        if depth == 0:
            return text[at + 1 : index]
    raise AssertionError(f"{opening} is not closed")


def declared_calls() -> set[str]:
    body = block(SOURCE.read_text(), "export interface ChatWidgetApi")
    methods = set(re.findall(r"^\s+(\w+)(?:<[^>]*>)?\(", body, re.M))
    members = set(re.findall(r"^\s+readonly (\w+):", body, re.M))
    return methods | members


def declared_events() -> set[str]:
    body = block(SOURCE.read_text(), "export interface ChatWidgetEvents")
    return set(re.findall(r'^\s+"?([\w:]+)"?:', body, re.M))


def loader_calls() -> set[str]:
    """The members of the loader's `api` object: its queued calls and its own functions."""
    source = LOADER.read_text()
    api = block(source, "var api =")
    return set(re.findall(r"^\s{4}(\w+):", api, re.M)) - {
        "origin",
        "guid",
        "nonce",
        "language",
        "preview",
        "q",
        "handlers",
    }


def guide_events() -> set[str]:
    """The first column of the guide's events table (the one headed `| Event |`)."""
    page = GUIDE.read_text()
    table = page[page.index("| Event |") :].split("\n\n", 1)[0]
    return set(re.findall(r"^\| `([\w:]+)` \|", table, re.M))


def test_the_reading_finds_what_it_looks_for():
    assert {"open", "send", "setUser", "trigger", "on", "grantConsent", "version"} <= loader_calls()
    assert {"ready", "chat:started", "unread"} <= guide_events()


def test_the_types_name_every_call_the_loader_offers():
    missing = loader_calls() - declared_calls()
    assert not missing, f"chat-widget.d.ts does not declare: {sorted(missing)}"


def test_the_types_name_every_call_of_the_issue():
    calls = {"setUser", "reset", "setAttributes", "show", "hide", "open", "close", "send", "trigger"}
    calls |= {"identify", "setLanguage", "on", "off", "grantConsent", "version"}
    assert calls <= declared_calls()


def test_the_types_name_exactly_the_events_the_guide_lists():
    assert declared_events() == guide_events()
    assert guide_events() == {"ready", "open", "close", "message", "chat:started", "chat:closed", "unread"}


def test_the_served_types_are_the_source():
    assert SERVED.read_bytes() == SOURCE.read_bytes()


def test_the_types_are_served_beside_the_loader_as_text(client):
    response = client.get("/static/widget/chat-widget.d.ts")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    assert b"interface ChatWidgetApi" in b"".join(response.streaming_content)
