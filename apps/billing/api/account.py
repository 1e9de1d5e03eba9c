"""GET and PATCH /v1/account: the profile of the account that owns the token's widget."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework.response import Response

from apps.core.api.views import ScopedAPIView
from apps.core.models import Account

from .. import selectors, services
from . import serializers as s


def _account_response(account: Account) -> Response:
    return Response(
        s.account_payload(
            account,
            plan=selectors.plan_for(account),
            seats=selectors.seats_for(account),
            legal_entities=selectors.list_legal_entities(account=account),
        )
    )


@extend_schema_view(
    get=extend_schema(
        summary="Get the account",
    ),
    patch=extend_schema(
        summary="Update the account owner",
    ),
)
class AccountView(ScopedAPIView):
    """The owning account of the token's widget, with every legal entity of the account."""

    # SECURITY: the account comes from the token's widget, never from the request.
    route_scopes = {"get": ["account:read"], "patch": ["account:write"]}
    idempotency_required = {"patch"}
    problem_statuses = {"get": [404], "patch": [404, 409]}

    @extend_schema(responses={200: s.AccountDoc})
    def get(self, request):
        return _account_response(Account.objects.select_related("user").get(pk=request.widget.account_id))

    @extend_schema(
        request=s.AccountPatchInput,
        responses={200: s.AccountDoc},
        description="Merge-safe: only `name`, `surname` and `phone` are writable, each optional; null (or an "
        "empty string) clears. Names refuse control characters; the phone allows an optional leading +, a digit, "
        "then digits, spaces, parentheses or hyphens, at most 32 characters. `email`, `password`, account deletion and "
        "`legal_entities` are refused by name (422). A changed `name` purges the served cache of every widget "
        "of the account.",
    )
    def patch(self, request):
        data = self.validated(s.AccountPatchInput)
        account = services.update_account_profile(widget=request.widget, changes=dict(data))
        return _account_response(Account.objects.select_related("user").get(pk=account.pk))
