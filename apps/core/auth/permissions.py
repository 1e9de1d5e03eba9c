"""Deny-by-default scope check.

SECURITY: every API view declares `route_scopes = {action: [scope, alternative, ...]}`; any one
listed scope grants the action (write never implies read). The declaration is enforced when the
class is defined (see apps.core.api.views), and at request time an action without an entry is
refused, never allowed.
"""

from __future__ import annotations

from rest_framework.permissions import BasePermission

from apps.core.errors import ApiDisabled, MissingScope, NotAuthenticated

from .authentication import TokenPrincipal


def current_action(view, request) -> str | None:
    """The action this request runs, or None when the method is not served (405 follows)."""
    if hasattr(view, "current_action"):
        return view.current_action()
    return getattr(view, "action", None)


class ScopePermission(BasePermission):
    def has_permission(self, request, view) -> bool:
        principal = request.user
        if not isinstance(principal, TokenPrincipal):
            raise NotAuthenticated("Send `Authorization: Bearer <token>`.")
        if not principal.widget.api_enabled:
            raise ApiDisabled("Enable “Allow widget API (JS and REST)” for this widget in the cabinet.")
        action = current_action(view, request)
        if action is None:
            return True  # the method is not served: dispatch answers 405
        scopes = getattr(view, "route_scopes", {}).get(action)
        if not scopes:
            # Unknown action (e.g. an unrouted method): deny.
            raise MissingScope("No scope grants this operation.", required_scopes=[])
        if principal.scopes.isdisjoint(scopes):
            raise MissingScope(f"This operation needs one of: {', '.join(scopes)}.", required_scopes=list(scopes))
        return True


def demand_scopes(held: frozenset[str] | set[str], *any_of: str, detail: str | None = None) -> None:
    """Conditional scopes chosen by the request body (e.g. `responder:escalate` on
    POST /v1/ai/replies): call from the service once the body has selected them, before any state
    is read or consumed. Raises 403 missing_scope naming the scopes that would do."""
    if held.isdisjoint(any_of):
        raise MissingScope(detail or f"This request needs one of: {', '.join(any_of)}.", required_scopes=list(any_of))
