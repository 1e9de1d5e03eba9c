"""The API guide's "Contacts, chats and sending a message" example, run as written against the
Procfile's web process: a visitor's first message creates the contact and the chat, and an answer
into the unassigned chat names its agent."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from tests.live import ROOT

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]

GUIDE = (ROOT / "docs" / "integrating" / "api.md").read_text(encoding="utf-8")


def example() -> str:
    match = re.search(r"<!-- docs-example: first-chat -->\n```sh\n(.*?)```", GUIDE, re.S)
    assert match, "the first-chat example is not marked in docs/integrating/api.md"
    return match.group(1)


def test_the_first_chat_example_runs_as_written(start_server):
    server = start_server(VISITOR_SESSIONS_PER_ADDRESS_PER_HOUR="0")
    script = example()
    # the reader pastes make run's values over the placeholders of the first line
    placeholders = "export TOKEN=cwt_...  API=http://127.0.0.1:8000  BUTTON_GUID=..."
    assert script.startswith(placeholders + "\n")
    script = script.replace(
        placeholders,
        f"export TOKEN={server.seed['token']}  API={server.url('').rstrip('/')}  BUTTON_GUID={server.seed['button_guid']}",
    )
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stdout + done.stderr
    chat, contacts, status, conversation = done.stdout.strip().splitlines()
    (contact,) = json.loads(contacts)["data"]
    assert contact["name"] == "Anna" and json.loads(chat)["client_id"] == contact["id"]
    assert status == "202"
    bodies = [m["body"] for m in json.loads(conversation)["data"]]
    assert bodies[0] == "Hello, is the shop open today?"
    assert "Hi Anna, we are open until 8 pm." in bodies
