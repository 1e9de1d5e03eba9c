"""The per-token API budget (apps.core.ratelimit.api_token_decision) as DRF's throttle.

Set as DEFAULT_THROTTLE_CLASSES: every call authenticated with an API token consumes one unit. The
decision stays on the request: the view reports it in the `X-RateLimit-*` headers of every answer,
and a refused call's 429 carries its `Retry-After` (ContractMixin.throttled). A request without a
token (the visitor API, provider hooks, the legacy wire format) is not counted here; those routes
have budgets of their own.
"""

from __future__ import annotations

from rest_framework.throttling import BaseThrottle

from apps.core import ratelimit
from apps.core.models import ApiToken


class TokenRateThrottle(BaseThrottle):
    decision: ratelimit.Decision | None = None

    def allow_request(self, request, view) -> bool:
        token = request.auth
        if not isinstance(token, ApiToken):
            return True
        self.decision = request.rate_limit_decision = ratelimit.api_token_decision(token)
        return self.decision.allowed

    def wait(self) -> float | None:
        return None if self.decision is None else self.decision.retry_after
