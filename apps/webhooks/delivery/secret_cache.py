"""The targets' signing secrets, decrypted once per process."""

from __future__ import annotations

from datetime import datetime

from apps.core.crypto import decrypt_secret

_secrets: dict[str, str] = {}
SECRETS_CACHED = 1024


def _secret(token: str) -> str | None:
    """The signing secret of a stored Fernet token, decrypted once per process: building the key
    list and decrypting cost about a tenth of an attempt's CPU. Keyed by the token itself, so a
    rotated secret (a new token) is read anew; a token that does not decrypt is never cached."""
    secret = _secrets.get(token)
    if secret is None:
        secret = decrypt_secret(token)
        if secret is not None:
            if len(_secrets) >= SECRETS_CACHED:
                _secrets.clear()
            _secrets[token] = secret
    return secret


def _previous_secret(target, now: datetime) -> str | None:
    """The old secret of an `Endpoint` while its rotation overlap window lasts."""
    until = getattr(target, "previous_secret_until", None)
    if until is None or until <= now or not target.previous_secret_encrypted:
        return None
    return _secret(target.previous_secret_encrypted)
