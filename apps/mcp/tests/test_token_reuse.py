"""One MCP request reads its bearer token once: apps.mcp.asgi resolves it, and the tools' Context and
the REST routes they call in-process reuse that very token (apps.core.auth.authentication's
RESOLVED_TOKEN), never a token for another credential."""

from __future__ import annotations

import pytest

from apps.core.auth import authentication
from apps.core.auth.authentication import RESOLVED_TOKEN, BearerTokenAuthentication
from apps.core.errors import InvalidToken
from apps.mcp.registry import Context
from tests.support.plugin import ALL

pytestmark = pytest.mark.django_db


@pytest.fixture
def lookups(monkeypatch):
    seen = []
    real = authentication.find_token

    def counting(prefix):
        seen.append(prefix)
        return real(prefix)

    monkeypatch.setattr(authentication, "find_token", counting)
    return seen


def test_a_context_reuses_the_token_its_request_resolved(make_token, widget, lookups):
    credential = make_token(widget, ALL)
    token = BearerTokenAuthentication.resolve(credential)
    lookups.clear()
    context = Context.authenticate(credential, {RESOLVED_TOKEN: (credential, token)})
    assert context.token is token and context.widget == widget
    assert lookups == []


def test_a_route_called_in_process_reads_no_token_again(make_token, widget, lookups):
    credential = make_token(widget, ALL)
    token = BearerTokenAuthentication.resolve(credential)
    context = Context.authenticate(credential, {RESOLVED_TOKEN: (credential, token)})
    lookups.clear()
    assert context.call("GET", "/api/v1/chats")["data"] == []
    assert lookups == []


def test_a_resolved_token_of_another_credential_is_not_taken(make_token, widget, other_widget, lookups):
    mine = make_token(widget, ALL)
    theirs = BearerTokenAuthentication.resolve(make_token(other_widget, ALL))
    context = Context.authenticate(mine, {RESOLVED_TOKEN: (make_token(other_widget, ALL), theirs)})
    assert context.widget == widget
    with pytest.raises(InvalidToken):
        Context.authenticate("cwt_not-a-token", {RESOLVED_TOKEN: ("something else", theirs)})
