"""The in-process REST call (apps.mcp.dispatch through registry.Context.call) and the schemas."""

from __future__ import annotations

import pytest

from apps.chats.tests.factories import ChatFactory
from apps.mcp import schemas
from apps.mcp.registry import Call, ToolRefused

CHAT = Call("GET", "/api/v1/chats/{id}")


def test_a_get_route_answers_its_json_as_rest_does(mcp_context, widget, api):
    chat = ChatFactory(widget=widget)
    ctx = mcp_context(scopes=["chats:read"])
    got = ctx.call("GET", CHAT.path, path_params={"id": chat.pk})
    rest = api(scopes=["chats:read"]).get(f"/api/v1/chats/{chat.pk}").json()
    assert got == rest
    assert got["id"] == chat.pk


def test_a_foreign_id_is_refused_as_a_missing_one(mcp_context, widget, other_widget):
    foreign = ChatFactory(widget=other_widget)
    ctx = mcp_context(scopes=["chats:read"])
    with pytest.raises(ToolRefused) as foreign_refusal:
        ctx.call("GET", CHAT.path, path_params={"id": foreign.pk})
    with pytest.raises(ToolRefused) as missing_refusal:
        ctx.call("GET", CHAT.path, path_params={"id": foreign.pk + 1000})
    assert foreign_refusal.value.problem == missing_refusal.value.problem
    assert foreign_refusal.value.problem["status"] == 404
    assert foreign_refusal.value.problem["code"] == "not_found"


def test_a_route_without_the_tokens_scope_is_refused_with_missing_scope(mcp_context, widget):
    chat = ChatFactory(widget=widget)
    ctx = mcp_context(scopes=["contacts:read"])
    with pytest.raises(ToolRefused) as refusal:
        ctx.call("GET", CHAT.path, path_params={"id": chat.pk})
    problem = refusal.value.problem
    assert (problem["status"], problem["code"]) == (403, "missing_scope")
    assert problem["required_scopes"] == ["chats:read"]
    assert set(problem) >= {"code", "detail", "status"}
    assert "type" not in problem and "title" not in problem


def test_a_calls_scopes_are_its_routes_own():
    assert CHAT.scopes() == frozenset({"chats:read"})
    with pytest.raises(LookupError):
        Call("GET", "/api/v1/nowhere").scopes()


def test_the_input_schema_is_the_routes_parameters_and_body():
    schema = schemas.input_for(CHAT)
    assert schema["type"] == "object"
    assert schema["properties"]["id"]["type"] == "integer"
    assert schema["required"] == ["id"]
    assert "$ref" not in repr(schema)


def test_the_output_schema_is_self_contained():
    schema = schemas.output_for(CHAT)
    assert "id" in schema["properties"]
    assert "$ref" not in repr({k: v for k, v in schema.items() if k != "$defs"}) or "$defs" in schema


def test_the_in_process_request_passes_the_rest_apis_middleware(mcp_context, widget, caplog):
    """The request log line (method, path, status, token prefix: the middleware every REST request
    passes) is written for the tool's request as for a client's."""
    chat = ChatFactory(widget=widget)
    ctx = mcp_context(scopes=["chats:read"])
    with caplog.at_level("INFO", logger="apps.request"):
        ctx.call("GET", CHAT.path, path_params={"id": chat.pk}, query={"unused": None})
    (line,) = [r for r in caplog.records if r.name == "apps.request" and r.getMessage() == "request"]
    assert (line.method, line.path, line.status) == ("GET", f"/api/v1/chats/{chat.pk}", 200)
    assert line.token == ctx.token.prefix and line.widget_id == widget.pk


def test_query_values_and_path_parameters_are_encoded_as_a_client_would():
    from apps.mcp import dispatch

    assert dispatch.fill("/api/v1/chats/{id}", {"id": "a/b c"}) == "/api/v1/chats/a%2Fb%20c"
    assert dispatch._query_string({"a": True, "b": [1, 2], "c": None, "q": "x&y"}) == "a=true&b=1&b=2&q=x%26y"
    with pytest.raises(ValueError):
        dispatch.fill("/api/v1/chats/{id}", {})


def test_a_redirect_instead_of_an_answer_is_refused_not_taken_for_an_empty_success(
    mcp_context, widget, settings, monkeypatch
):
    """A plain-HTTP /mcp where the REST API requires HTTPS: the route never ran."""
    from apps.mcp import dispatch

    settings.SECURE_SSL_REDIRECT = True
    monkeypatch.setattr(dispatch, "_handler", None)  # the middleware reads the setting when loaded
    chat = ChatFactory(widget=widget)
    ctx = mcp_context(scopes=["chats:read"])
    ctx.environ = {"wsgi.url_scheme": "http", "SERVER_PORT": "80"}
    with pytest.raises(ToolRefused) as refusal:
        ctx.call("GET", CHAT.path, path_params={"id": chat.pk})
    assert (refusal.value.problem["code"], refusal.value.problem["status"]) == ("redirected", 301)
    assert "https://" in refusal.value.problem["detail"]
