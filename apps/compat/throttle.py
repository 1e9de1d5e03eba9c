"""Per-address limits of the compat routes. They take no bearer token (the secret is in the path),
so the per-token API budget does not apply; two budgets per client address do instead:

- `COMPAT_REQUESTS_PER_ADDRESS_PER_MINUTE` (default 600; 0 turns it off): every compat request.
  Over it the answer is 503 `compat_throttled` with `Retry-After`, not 429: the legacy platform's
  senders treat every 4xx as final and would drop the message, while they retry a 5xx.
- `COMPAT_UNKNOWN_SECRETS_PER_ADDRESS_PER_HOUR` (default 30; 0 off): path secrets that match no bot
  or channel (401/404). Once an address has spent it, every compat request from it is 429
  `too_many_unknown_secrets` until the window frees up: guessing a secret is final, and the lookup
  is never reached.

Both are checked before the secret is looked up, so a refused request costs one budget check.
"""

from __future__ import annotations

import math

from django.conf import settings

from apps.core.errors import AppError
from apps.core.ratelimit import consume

REQUESTS = "compat_requests"
UNKNOWN = "compat_unknown_secrets"


class CompatThrottled(AppError):
    status, code, title = 503, "compat_throttled", "Too many requests from this address; retry later"


class TooManyUnknownSecrets(AppError):
    status, code, title = 429, "too_many_unknown_secrets", "Too many unknown secrets from this address"


def _retry(seconds: float) -> dict[str, str]:
    return {"Retry-After": str(max(1, math.ceil(seconds)))}


def admit(address: str) -> None:
    """Before any lookup: the address has not guessed too often and is within its request rate."""
    guesses = consume(
        f"{UNKNOWN}:{address}", limit=settings.COMPAT_UNKNOWN_SECRETS_PER_ADDRESS_PER_HOUR, window=3600, cost=0
    )
    if guesses.limit and guesses.remaining == 0:
        raise TooManyUnknownSecrets(
            "This address sent too many unknown secrets; it is refused for a while.",
            headers=_retry(guesses.reset_after),
        )
    decision = consume(f"{REQUESTS}:{address}", limit=settings.COMPAT_REQUESTS_PER_ADDRESS_PER_MINUTE, window=60)
    if not decision.allowed:
        raise CompatThrottled(
            f"At most {decision.limit} compat requests per minute from one address.",
            headers=_retry(decision.retry_after),
        )


def unknown_secret(address: str) -> None:
    """A path secret that matched nothing: one unit of the address's hourly guess budget."""
    consume(f"{UNKNOWN}:{address}", limit=settings.COMPAT_UNKNOWN_SECRETS_PER_ADDRESS_PER_HOUR, window=3600)
