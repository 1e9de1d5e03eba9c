"""The one base of every support route.

SECURITY: every support call runs, in this order: authentication (401) -> per-token rate limit
(429) -> api_enabled and the route scope (403) -> the support gate (apps.support.gate: 503/403/403/503,
re-checked on every request) -> on writes the idempotency key (400) and `X-Service-Agent` (400) ->
the action. Every call that names a token is audited in `SupportAction`, refused ones included,
after the action's own transaction has ended (a refused write rolls back its work, never its
audit row). Problem bodies of support routes carry `reason` beside `code`.
"""

from __future__ import annotations

import re

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter

from apps.chats.selectors import client_address
from apps.core.auth.authentication import TokenPrincipal

from .. import gate
from ..errors import ServiceAgentMissing
from ..models import SupportAction

SERVICE_AGENT_HEADER = "X-Service-Agent"
_SERVICE_AGENT_RE = re.compile(r"[a-z0-9][a-z0-9_.-]{0,47}")

SERVICE_AGENT_PARAMETER = OpenApiParameter(
    SERVICE_AGENT_HEADER,
    type=str,
    location=OpenApiParameter.HEADER,
    required=True,
    pattern=r"^[a-z0-9][a-z0-9_.-]{0,47}$",
    description="Who acts (the support agent's name); recorded in the audit.",
)


class SupportViewMixin:
    """Mixed in front of WidgetScopedViewSet by every support viewset."""

    audit_prefix = "support"
    # The gate passed for this request (config, operator, address).
    support: gate.Passed | None = None

    def initial(self, request, *args, **kwargs):
        self.audit = {}
        self.support = None
        self._audit_row = None
        super().initial(request, *args, **kwargs)
        if self.current_action() in self.idempotency_required:
            agent = request.META.get("HTTP_X_SERVICE_AGENT")
            if agent is None or not _SERVICE_AGENT_RE.fullmatch(agent):
                raise ServiceAgentMissing(
                    f"Support writes need {SERVICE_AGENT_HEADER} matching ^[a-z0-9][a-z0-9_.-]{{0,47}}$."
                )
            self.audit["service_agent"] = agent

    def check_permissions(self, request):
        super().check_permissions(request)
        self.support = gate.check_request(request)

    @property
    def service_agent(self) -> str:
        return self.audit.get("service_agent", "")

    # --- audit ---------------------------------------------------------------------------------------

    def audit_fields(self, request, response=None) -> dict:
        token = request.auth
        data = getattr(response, "data", None)
        refused = response is not None and response.status_code >= 400
        fields = {
            "widget_id": token.widget_id,
            "token_id": token.pk,
            "token_prefix": token.prefix,
            "kind": f"{self.audit_prefix}.{self.current_action() or request.method.lower()}",
            "method": request.method,
            "path": request.path[:500],
            "client_address": (self.support.address if self.support else client_address(request))[:64],
            "idempotency_key": (request.META.get("HTTP_X_SERVICE_IDEMPOTENCY_KEY") or "")[:64],
            "service_agent": self.audit.get("service_agent", "")[:48],
            "chat_id": self.audit.get("chat_id") or _int(self.kwargs.get("pk")),
            "ticket_number": self.audit.get("ticket_number") or _int(self.kwargs.get("number")),
            "message_id": self.audit.get("message_id"),
            "claim_id": (self.audit.get("claim_id") or "")[:64],
            "text_sha256": self.audit.get("text_sha256", ""),
            "text_length": self.audit.get("text_length"),
            "is_support_reply": bool(self.audit.get("is_support_reply")),
        }
        if response is not None:
            fields["status_code"] = response.status_code
            fields["finished_at"] = timezone.now()
            if refused:
                fields["outcome"] = SupportAction.Outcome.REFUSED
                fields["reason"] = (data.get("code") if isinstance(data, dict) else "") or ""
            else:
                fields["outcome"] = self.audit.get("outcome", SupportAction.Outcome.OK)
        return fields

    def open_audit_row(self, *, status: int) -> SupportAction:
        """Create this action's audit row now, as answered with `status` (inside the action's
        transaction), so the response can name it. `finalize_response` leaves it when the answer is
        that status, and otherwise (the transaction rolled back, or another answer) writes it again."""
        fields = self.audit_fields(self.request)
        fields.update(status_code=status, finished_at=timezone.now(), outcome=self.audit.get("outcome", "ok"))
        self._audit_row = SupportAction.objects.create(**fields)
        return self._audit_row

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if response.status_code >= 400 and isinstance(getattr(response, "data", None), dict):
            if "code" in response.data:
                response.data.setdefault("reason", response.data["code"])
        if isinstance(getattr(request, "_user", None), TokenPrincipal) and getattr(request, "_auth", None) is not None:
            fields = self.audit_fields(request, response)
            row = getattr(self, "_audit_row", None)
            if row is not None and row.status_code == response.status_code:
                return response  # written with the action, committed with it
            updated = 0
            if row is not None:
                updated = SupportAction.objects.filter(pk=row.pk).update(**fields)
            if not updated:
                SupportAction.objects.create(**fields)
        return response


def _int(value) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if 0 < number < 2**63 else None
