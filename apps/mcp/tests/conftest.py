"""Fixtures of the MCP server's tests (shared by the server's and the tools' tests)."""

from __future__ import annotations

import pytest

from apps.mcp.registry import Context


@pytest.fixture
def mcp_context(make_token, widget):
    """`mcp_context(scopes=..., w=None)`: a tool call's Context for a new token of `widget` (or `w`)."""
    from tests.support.plugin import ALL

    def make(scopes=ALL, w=None, **kwargs) -> Context:
        credential = make_token(w or widget, scopes, **kwargs)
        return Context.authenticate(credential)

    return make
