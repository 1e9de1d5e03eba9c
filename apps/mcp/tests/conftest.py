"""Fixtures of the MCP server's tests (shared by the server's and the tools' tests)."""

from __future__ import annotations

import pytest

from apps.mcp.registry import Context

BUDGET = 25  # the per-token budget of the live processes (API_RATE_LIMIT_PER_MINUTE)
NARROW = ["chats:read"]


@pytest.fixture(scope="session")
def live(tmp_path_factory):
    """The Procfile's web process on a migrated, seeded embedded default of its own (apps.mcp.tests.live),
    with tokens of the demo widget: `full` (every operational scope), `narrow` (NARROW), and
    `budget`, `stdio_budget`, `other` (every scope; each test that spends a budget has its own)."""
    from apps.core.auth.scopes import OPERATIONAL_SCOPES

    from .live import Live, build_template, issue_tokens, start_web

    template = build_template(tmp_path_factory.mktemp("mcp-live"))
    every = sorted(OPERATIONAL_SCOPES)
    wanted = {"full": every, "narrow": NARROW, "budget": every, "stdio_budget": every, "other": every}
    tokens = issue_tokens(template.var_dir, template.seed["button_guid"], wanted)
    log = template.var_dir / "web.log"
    server = start_web(template.var_dir, template.seed, log, API_RATE_LIMIT_PER_MINUTE=str(BUDGET))
    try:
        yield Live(server=server, var_dir=template.var_dir, tokens=tokens)
    finally:
        server.terminate()


@pytest.fixture
def mcp_context(make_token, widget):
    """`mcp_context(scopes=..., w=None)`: a tool call's Context for a new token of `widget` (or `w`)."""
    from tests.support.plugin import ALL

    def make(scopes=ALL, w=None, **kwargs) -> Context:
        credential = make_token(w or widget, scopes, **kwargs)
        return Context.authenticate(credential)

    return make
