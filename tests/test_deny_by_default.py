"""Deny by default: every route under /api/v1 refuses a caller without a token (401) and a token
without the route's scope (403), and a view without a scope declaration cannot even be defined."""

import re

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework import mixins
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.core.api.views import RouteDeclarationError, ScopedAPIView, WidgetScopedViewSet
from apps.core.auth.scopes import ALL_SCOPES
from tests.support.plugin import assert_problem
from tests.testapp.models import Note

pytestmark = pytest.mark.django_db


def _walk(patterns, prefix=""):
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from _walk(p.url_patterns, prefix + str(p.pattern))
        elif isinstance(p, URLPattern):
            yield prefix + str(p.pattern), p.callback


def _concrete(regex: str) -> str:
    path = regex.replace("^", "").replace("$", "").replace("/?", "")
    path = re.sub(r"\(\?P<[^>]+>[^)]*\)", "1", path)
    path = re.sub(r"<[^>]+>", "1", path)
    return "/" + path


def _methods(callback) -> list[str]:
    actions = getattr(callback, "actions", None)
    if actions:
        return sorted(m for m in actions if m != "head")
    cls = getattr(callback, "cls", None)
    return sorted(m for m in ("get", "post", "put", "patch", "delete") if cls and hasattr(cls, m))


def api_routes():
    routes = []
    for regex, callback in _walk(get_resolver().url_patterns):
        path = _concrete(regex)
        if not path.startswith("/api/v1/") or path.startswith("/api/v1/schema"):
            continue
        for method in _methods(callback):
            routes.append((method, path, callback))
    return routes


def test_the_walk_finds_routes():
    found = {(m, p) for m, p, _ in api_routes()}
    assert ("get", "/api/v1/_test/notes") in found
    assert ("post", "/api/v1/_test/notes/1/assign") in found


def test_every_api_view_is_a_scoped_view():
    for method, path, callback in api_routes():
        cls = callback.cls
        assert issubclass(cls, (ScopedAPIView, WidgetScopedViewSet)), (method, path, cls)
        declared = cls.route_scopes
        for scopes in declared.values():
            assert scopes and set(scopes) <= ALL_SCOPES, (path, scopes)


def test_every_route_refuses_a_request_without_token(client):
    for method, path, _ in api_routes():
        response = getattr(client, method)(path)
        assert_problem(response, 401)
        assert "WWW-Authenticate" in response, (method, path)


def test_every_route_refuses_a_token_without_its_scope(api, widget):
    Note.objects.create(widget=widget, title="x")  # a real id 1 may or may not exist; scope comes first
    client = api(scopes=["partners:withdraw"])
    for method, path, _ in api_routes():
        response = getattr(client, method)(path, {}, format="json")
        assert_problem(response, 403, "missing_scope")


def test_view_without_scope_for_an_action_cannot_be_defined():
    with pytest.raises(RouteDeclarationError, match="no scopes for: retrieve"):

        class Undeclared(WidgetScopedViewSet, mixins.ListModelMixin, mixins.RetrieveModelMixin):
            queryset = Note.objects.all()
            route_scopes = {"list": ["chats:read"]}


def test_extra_action_without_scope_cannot_be_defined():
    with pytest.raises(RouteDeclarationError, match="close"):

        class Undeclared(WidgetScopedViewSet, mixins.ListModelMixin):
            queryset = Note.objects.all()
            route_scopes = {"list": ["chats:read"]}

            @action(detail=True, methods=["post"])
            def close(self, request, pk=None):
                return Response()


def test_api_view_without_scope_for_a_method_cannot_be_defined():
    with pytest.raises(RouteDeclarationError, match="post"):

        class Undeclared(ScopedAPIView):
            route_scopes = {"get": ["stats:read"]}

            def get(self, request):
                return Response()

            def post(self, request):
                return Response()


def test_unknown_or_reserved_scope_cannot_be_declared():
    with pytest.raises(RouteDeclarationError, match="not grantable"):

        class Reserved(ScopedAPIView):
            route_scopes = {"get": ["partners:withdraw"]}

            def get(self, request):
                return Response()

    with pytest.raises(RouteDeclarationError, match="not grantable"):

        class Unknown(ScopedAPIView):
            route_scopes = {"get": ["chats:everything"]}

            def get(self, request):
                return Response()


@pytest.mark.parametrize("method", ["get_queryset", "get_object"])
def test_overriding_tenancy_methods_is_refused(method):
    with pytest.raises(RouteDeclarationError, match=method):
        type(
            "Sneaky",
            (WidgetScopedViewSet, mixins.ListModelMixin),
            {
                "queryset": Note.objects.all(),
                "route_scopes": {"list": ["chats:read"]},
                method: lambda self: None,
                "__module__": __name__,
            },
        )


def test_conditional_scope_hook_names_the_scope():
    from apps.core.auth.permissions import demand_scopes
    from apps.core.errors import MissingScope

    demand_scopes(frozenset({"responder:inject", "responder:escalate"}), "responder:escalate")
    with pytest.raises(MissingScope) as caught:
        demand_scopes(frozenset({"responder:inject"}), "responder:escalate")
    assert caught.value.extra["required_scopes"] == ["responder:escalate"]
