"""The base classes every API view inherits.

SECURITY: `WidgetScopedViewSet` owns `get_queryset`/`get_object`; a subclass that overrides either
fails at class definition (refine with `scope_queryset`). Every view declares
`route_scopes = {action: [scope, ...]}` for each action it serves; a missing declaration, or a scope
outside the catalogue, fails at class definition. The checks on every request are DRF's
(`APIView.initial`): authentication (401) -> permissions: api_enabled, scopes (403) -> the per-token
rate limit (429, apps.core.api.throttling) -> then the idempotency key's shape (400) -> the action,
whose claim of the key and work share one transaction. A call the permissions refuse is counted
against the budget too, and over budget answers 429 rather than 403.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

from django.db import connection, transaction
from rest_framework import viewsets
from rest_framework.views import APIView

from apps.audit import services as audit
from apps.core import idempotency
from apps.core.api.negotiation import AcceptNegotiation
from apps.core.api.serializers import validate_input
from apps.core.auth.scopes import ALL_SCOPES, RESERVED_SCOPES
from apps.core.errors import NotFound, RateLimited

_STANDARD_ACTIONS = ("list", "create", "retrieve", "update", "partial_update", "destroy")
_HTTP_METHODS = ("get", "post", "put", "patch", "delete")


class RouteDeclarationError(TypeError):
    pass


def _check_scopes(cls, actions: set[str]) -> None:
    declared = getattr(cls, "route_scopes", None)
    if not isinstance(declared, dict):
        raise RouteDeclarationError(f"{cls.__name__} must declare route_scopes = {{action: [scopes]}}")
    missing = sorted(a for a in actions if not declared.get(a))
    if missing:
        raise RouteDeclarationError(f"{cls.__name__} declares no scopes for: {', '.join(missing)}")
    for action, scopes in declared.items():
        if isinstance(scopes, str):
            raise RouteDeclarationError(f"{cls.__name__}.route_scopes[{action!r}] must be a list")
        bad = [s for s in scopes if s not in ALL_SCOPES or s in RESERVED_SCOPES]
        if bad:
            raise RouteDeclarationError(f"{cls.__name__}.route_scopes[{action!r}]: not grantable: {bad}")
    unknown_idem = set(getattr(cls, "idempotency_required", ())) - actions
    unknown_idem |= set(getattr(cls, "idempotency_deferred", ())) - set(getattr(cls, "idempotency_required", ()))
    if unknown_idem:
        raise RouteDeclarationError(f"{cls.__name__}.idempotency_required names unknown actions {unknown_idem}")


class ContractMixin:
    """Rate-limit headers, the checks above, and the idempotency wrapper."""

    content_negotiation_class = AcceptNegotiation

    route_scopes: dict[str, list[str]] = {}
    # Actions marked `x-idempotency: required`.
    idempotency_required: frozenset[str] | set[str] = frozenset()
    # Of those, actions that do slow outside work (an outbound fetch) before their side effect:
    # they run outside a transaction and claim the key with `with self.idempotency_claim():`
    # around the side effect, so no database transaction is held during the slow part.
    idempotency_deferred: frozenset[str] | set[str] = frozenset()
    # Optional per-action extra problem statuses for the OpenAPI document, e.g. {"close": [409]}.
    problem_statuses: dict[str, list[int]] = {}
    # Largest accepted body for this view (None: API_MAX_BODY_BYTES).
    max_body_bytes: int | None = None
    _token_authenticated = False

    def validated(self, serializer_class, *, data=None, partial: bool = False, context=None, **kwargs) -> dict:
        """Validate the body (or `data`) with an `XInput` serializer; errors raise 422.
        `context` adds to the view's serializer context."""
        return validate_input(
            serializer_class,
            self.request.data if data is None else data,
            partial=partial,
            context={**self.get_serializer_context(), **(context or {})},
            **kwargs,
        )

    def current_action(self) -> str | None:
        if getattr(self, "action_map", None):
            return getattr(self, "action", None)
        method = self.request.method.lower()
        if method == "head":
            method = "get"
        return method if method in _HTTP_METHODS and hasattr(self, method) else None

    def perform_authentication(self, request):
        super().perform_authentication(request)
        if request.auth is not None:  # audited writes of this request name the token as their actor
            self._token_authenticated = True
            self._audit_actor = audit.set_actor(audit.token_actor(request.auth))

    def initial(self, request, *args, **kwargs):
        try:
            super().initial(request, *args, **kwargs)  # authentication, permissions, throttles
        except Exception:
            # A call its permissions refuse still counts against its token's budget (the refusal
            # reports it), and a spent budget answers 429 before the refusal.
            if self._token_authenticated and getattr(request, "rate_limit_decision", None) is None:
                self.check_throttles(request)
            raise
        if any(isinstance(value, str) and "\x00" in value for value in kwargs.values()):
            # No stored key holds NUL, and PostgreSQL refuses it in a query (or an idempotency claim's path).
            raise NotFound()
        action = self.current_action()
        if action in self.idempotency_required:
            key = idempotency.validate_key(request.META.get(idempotency.META_KEY))
            method = request.method.lower()
            wrap = self._idempotent_deferred if action in self.idempotency_deferred else self._idempotent
            setattr(self, method, wrap(getattr(self, method), key))

    def throttled(self, request, wait):
        raise RateLimited("Per-token rate limit reached.", headers={"Retry-After": str(max(1, math.ceil(wait or 0)))})

    @contextmanager
    def idempotency_claim(self):
        """Deferred actions: the claim and the side effect in one transaction (see above)."""
        with transaction.atomic():
            self._idempotency_row = idempotency.claim(
                widget=self.request.widget,
                key=self._idempotency_key,
                method=self.request.method,
                path=self.request.path,
            )
            yield

    def _idempotent_deferred(self, handler, key: str):
        """The result is recorded just after the claim's transaction commits; a reuse arriving in
        that instant sees `previous.status` null (the operation is still finishing)."""

        def run(request, *args, **kwargs):
            self._idempotency_key, self._idempotency_row = key, None
            response = handler(request, *args, **kwargs)
            row = self._idempotency_row
            if response.status_code < 400:
                if row is None:
                    raise AssertionError("a deferred idempotent action must use idempotency_claim()")
                idempotency.record(
                    row,
                    status=response.status_code,
                    resource_id=_resource_id(response.data),
                    location=response.get("Location", ""),
                )
            return response

        return run

    def _idempotent(self, handler, key: str):
        def run(request, *args, **kwargs):
            with transaction.atomic():
                row = idempotency.claim(widget=request.widget, key=key, method=request.method, path=request.path)
                response = handler(request, *args, **kwargs)
                if response.status_code >= 400:
                    transaction.set_rollback(True)
                    return response
                idempotency.record(
                    row,
                    status=response.status_code,
                    resource_id=_resource_id(response.data),
                    location=response.get("Location", ""),
                )
                return response

        return run

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        actor, self._audit_actor = getattr(self, "_audit_actor", None), None
        if actor is not None:
            audit.reset_actor(actor)
        decision = getattr(request, "rate_limit_decision", None)
        if decision is not None:
            for name, value in decision.headers().items():
                response[name] = value
        return response


def _resource_id(data):
    if isinstance(data, dict):
        if "id" in data:
            return data["id"]
        inner = data.get("data")
        if isinstance(inner, dict):
            return inner.get("id")
    return None


class ScopedAPIView(ContractMixin, APIView):
    """A non-resource endpoint. `route_scopes` is keyed by HTTP method (`get`, `post`, ...)."""

    def get_serializer_context(self) -> dict:
        return {"request": self.request, "format_kwarg": getattr(self, "format_kwarg", None), "view": self}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("abstract", False):
            return
        _check_scopes(cls, {m for m in _HTTP_METHODS if hasattr(cls, m)})


class WidgetScopedViewSet(ContractMixin, viewsets.GenericViewSet):
    """Every viewset over widget-owned rows inherits this.

    `queryset` names the model; rows are always filtered on `tenant_field` (default `widget`) with
    the token's widget. Refine with `scope_queryset(qs)`; look up with `lookup_field`. A foreign id
    answers exactly as a missing one (404 not_found).
    """

    tenant_field = "widget"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in ("get_queryset", "get_object"):
            if name in cls.__dict__:
                raise RouteDeclarationError(
                    f"{cls.__name__} overrides {name}; tenancy is owned by WidgetScopedViewSet "
                    "(use scope_queryset to refine)"
                )
        if cls.__dict__.get("abstract", False):
            return
        actions = {a for a in _STANDARD_ACTIONS if hasattr(cls, a)}
        for extra in cls.get_extra_actions():
            # An action's other methods (`@x.mapping.post`) are actions of their own name.
            actions |= {extra.__name__, *extra.mapping.values()}
        _check_scopes(cls, actions)

    def scope_queryset(self, queryset):
        """Hook: refine the tenant-filtered queryset (filters, select_related)."""
        return queryset

    @classmethod
    def tenant_queryset(cls, widget):
        """The rows of one widget (the token's)."""
        return cls.queryset.all().filter(**{cls.tenant_field: widget})

    def get_queryset(self):
        widget = getattr(self.request, "widget", None)
        if widget is None:
            return self.queryset.none()
        return self.scope_queryset(self.tenant_queryset(widget))

    def get_object(self):
        queryset = self.get_queryset()
        value = self.kwargs.get(self.lookup_url_kwarg or self.lookup_field)
        if _is_integer_field(queryset.model, self.lookup_field):
            value = self.lookup_key(value)
        try:
            obj = queryset.get(**{self.lookup_field: value})
        except (queryset.model.DoesNotExist, ValueError, TypeError):
            raise NotFound() from None
        self.check_object_permissions(self.request, obj)
        return obj

    def lookup_key(self, value=None) -> int:
        """The URL's key (or `value`) as the integer the ORM would look up; NotFound when it is not
        a whole number in its column's range (which finds nothing through the ORM either)."""
        if value is None:
            value = self.kwargs.get(self.lookup_url_kwarg or self.lookup_field)
        field = _integer_field(type(self).queryset.model, self.lookup_field)
        low, high = connection.ops.integer_field_range(field.get_internal_type())
        # ASCII digits only: int() would also take "+2", " 2", "2_0" and other scripts' digits, so
        # one row would answer at many addresses (the schema's id is an integer, written plainly)
        if not (isinstance(value, str) and value.isascii() and value.isdigit()):
            raise NotFound()
        try:
            key = int(value)
        except ValueError:  # more digits than int() converts
            raise NotFound() from None
        if (low is not None and key < low) or (high is not None and key > high):
            raise NotFound()
        return key


_INTEGER_TYPES = {"AutoField", "BigAutoField", "IntegerField", "BigIntegerField"}


def _lookup_field(model, name: str):
    return model._meta.pk if name == "pk" else model._meta.get_field(name)


def _is_integer_field(model, name: str) -> bool:
    return _lookup_field(model, name).get_internal_type() in _INTEGER_TYPES


def _integer_field(model, name: str):
    field = _lookup_field(model, name)
    if field.get_internal_type() not in _INTEGER_TYPES:
        raise TypeError(f"lookup_key needs an integer lookup field, not {model.__name__}.{name}")
    return field
