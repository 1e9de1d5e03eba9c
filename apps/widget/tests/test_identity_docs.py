"""The identity verification guide's server-side snippets (docs/integrating/widget.md) compute the
hash the service checks: the Python one is run here and must agree with the service's own check;
the Node one too when Node is installed (it builds the widget)."""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from apps.widget import selectors, services

pytestmark = pytest.mark.django_db

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "integrating" / "widget.md"


def snippet(language: str) -> str:
    text = GUIDE.read_text()
    section = text.split("## Identity verification", 1)[1].split("\n## ", 1)[0]
    found = re.search(rf"```{language}\n(.*?)```", section, re.S)
    assert found, f"no {language} snippet in the guide's identity section"
    return found.group(1)


@pytest.fixture
def secret(widget) -> str:
    return services.rotate_identity_secret(widget=widget)[0]


def test_the_python_snippet_makes_the_hash_the_service_accepts(widget, secret, monkeypatch):
    monkeypatch.setenv("IDENTITY_SECRET", secret)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(snippet("python"), str(GUIDE), "exec"), {"__name__": "guide"})  # noqa: S102 - our own docs
    made = printed.getvalue().strip()
    assert re.fullmatch(r"[0-9a-f]{64}", made)
    assert made == selectors.identity_hash(secret, "user-42")
    assert selectors.identity_hash_valid(widget=widget, external_id="user-42", hash=made)
    assert not selectors.identity_hash_valid(widget=widget, external_id="user-43", hash=made)


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_the_node_snippet_makes_the_same_hash(widget, secret):
    result = subprocess.run(  # noqa: S603 - a fixed program and our own docs
        [shutil.which("node"), "-e", snippet("javascript")],
        env={"IDENTITY_SECRET": secret, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert selectors.identity_hash_valid(widget=widget, external_id="user-42", hash=result.stdout.strip())


def test_the_php_and_ruby_snippets_use_hmac_sha256_over_the_id_keyed_by_the_secret():
    # No PHP or Ruby here to run them: their argument order is the classic mistake, so check it.
    assert "hash_hmac('sha256', $userId, $secret)" in snippet("php")
    assert 'OpenSSL::HMAC.hexdigest("SHA256", secret, user_id)' in snippet("ruby")
