"""Secrets at rest: Fernet tokens under a rotatable key list. Every app that stores a secret it must
read back uses it (webhook and channel signing secrets, provider API keys, messenger tokens,
support grants); `generate_secret` makes a Standard Webhooks signing secret.

WEBHOOK_SECRET_KEYS (comma-separated Fernet keys, newest first) encrypts with the first and
decrypts with any; `manage.py rotate_webhook_keys` re-encrypts every stored secret under the first
key, after which old keys can be dropped. Without the setting, one key is derived from SECRET_KEY.
"""

from __future__ import annotations

import base64
import hashlib
import secrets

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings

SECRET_PREFIX = "whsec_"  # noqa: S105 (a format marker, not a secret)


def _fernet() -> MultiFernet:
    keys = [k.strip() for k in getattr(settings, "WEBHOOK_SECRET_KEYS", []) if k.strip()]
    if not keys:
        digest = hashlib.sha256(b"webhook-secrets:" + settings.SECRET_KEY.encode()).digest()
        keys = [base64.urlsafe_b64encode(digest).decode()]
    return MultiFernet([Fernet(k) for k in keys])


def generate_secret() -> str:
    """`whsec_` + base64 of 32 random bytes: the Standard Webhooks secret format."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def encrypt_secret(secret: str) -> str:
    return _fernet().encrypt(secret.encode()).decode()


def decrypt_secret(token: str) -> str | None:
    if not token:
        return None
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        return None


def rotate_token(token: str) -> str:
    return _fernet().rotate(token.encode()).decode()
