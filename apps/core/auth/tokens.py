"""API token format, hashing and lookup.

Format: `cwt_` + 8 base62 public id + 32 base62 secret (190 bits) + 6 base62 CRC32 checksum of
everything before it, like GitHub's tokens, so secret scanners can spot a leaked token and reject
look-alikes offline. The stored `prefix` is `cwt_` + public id (non-secret, unique, indexed); the
whole token is stored only as its SHA-256 hash and compared in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import zlib

TOKEN_PREFIX = "cwt_"  # noqa: S105 (public marker, not a secret)
_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_ID_LEN, _SECRET_LEN, _CHECK_LEN = 8, 32, 6
TOKEN_LENGTH = len(TOKEN_PREFIX) + _ID_LEN + _SECRET_LEN + _CHECK_LEN
PREFIX_LENGTH = len(TOKEN_PREFIX) + _ID_LEN
TOKEN_RE = re.compile(rf"{TOKEN_PREFIX}[0-9A-Za-z]{{{_ID_LEN + _SECRET_LEN + _CHECK_LEN}}}")


def _random_base62(n: int) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(n))


def _base62(number: int, width: int) -> str:
    out = []
    for _ in range(width):
        number, rem = divmod(number, 62)
        out.append(_ALPHABET[rem])
    return "".join(reversed(out))


def checksum(body: str) -> str:
    return _base62(zlib.crc32(body.encode()), _CHECK_LEN)


def generate() -> tuple[str, str]:
    """A new (plaintext, prefix)."""
    body = TOKEN_PREFIX + _random_base62(_ID_LEN) + _random_base62(_SECRET_LEN)
    token = body + checksum(body)
    return token, token[:PREFIX_LENGTH]


def hash_token(token: str) -> str:
    """SHA-256 hex of a secret token: the one way API tokens, visitor sessions and invitation
    links are stored (only the hash is kept; lookups hash the presented token)."""
    return hashlib.sha256(token.encode()).hexdigest()


def is_well_formed(token: str) -> bool:
    """Shape and checksum: a typo or a look-alike fails here, before any database query."""
    if len(token) != TOKEN_LENGTH or not TOKEN_RE.fullmatch(token):
        return False
    body, check = token[:-_CHECK_LEN], token[-_CHECK_LEN:]
    return hmac.compare_digest(checksum(body), check)


def matches(token: str, secret_hash: str) -> bool:
    return hmac.compare_digest(hash_token(token), secret_hash)
