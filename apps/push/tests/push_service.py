"""A browser's side of Web Push for tests: a device with its own P-256 key pair and auth secret (as
`PushManager.subscribe()` makes them), and the checks an RFC 8030 push service makes, run on the
loopback HTTPS receiver of the webhook tests (apps.webhooks.tests.receiver).

The push service answers 201 Created (RFC 8030 5) with a Location, after checking the request the
way a real one does: POST, `TTL` present and numeric, `Urgency` one of RFC 8030 5.3's values,
`Content-Encoding: aes128gcm`, and `Authorization: vapid t=<JWT>, k=<key>` whose ES256 signature
verifies with the key it names and whose `aud` is the service's origin (RFC 8292). A request that
fails any check gets 400 (and `Hit.problem` says why).
"""

from __future__ import annotations

import base64
import json
import os
import time
from dataclasses import dataclass, field

import http_ece
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from apps.webhooks.tests.receiver import Hit, Reply

URGENCIES = ("very-low", "low", "normal", "high")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass
class Device:
    """One browser's push subscription: `subscription(endpoint)` is what the console's script posts."""

    key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    auth: bytes = field(default_factory=lambda: os.urandom(16))

    def subscription(self, endpoint: str) -> dict:
        public = self.key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return {"endpoint": endpoint, "keys": {"p256dh": b64url(public), "auth": b64url(self.auth)}}

    def read(self, hit: Hit) -> dict:
        """Decrypt what the push service received (RFC 8291, aes128gcm) with this device's keys."""
        plain = http_ece.decrypt(hit.body, private_key=self.key, auth_secret=self.auth, version="aes128gcm")
        return json.loads(plain)


def vapid_problem(hit: Hit, *, origin: str, public_key: str) -> str | None:
    """Why the VAPID authorization is wrong, or None (RFC 8292 3)."""
    header = hit.header("Authorization") or ""
    if not header.startswith("vapid "):
        return "no vapid authorization"
    params = dict(part.strip().split("=", 1) for part in header[len("vapid ") :].split(","))
    if params.get("k") != public_key:
        return "k is not the server's public key"
    token = params.get("t", "")
    try:
        signing_input, signature = token.rsplit(".", 1)
        head, claims = (json.loads(unb64url(part)) for part in signing_input.split("."))
        raw = unb64url(signature)
        point = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64url(params["k"]))
        der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
        point.verify(der, signing_input.encode(), ec.ECDSA(hashes.SHA256()))
    except (ValueError, KeyError, InvalidSignature):
        return "the JWT's signature does not verify"
    if head.get("alg") != "ES256":
        return "the JWT is not ES256"
    if claims.get("aud") != origin:
        return f"aud {claims.get('aud')!r} is not {origin!r}"
    if not (time.time() < claims.get("exp", 0) <= time.time() + 24 * 3600):
        return "exp is not within 24 hours"
    if not str(claims.get("sub", "")).startswith(("mailto:", "https://")):
        return "sub is not a mailto: or https: URL"
    return None


def push_service(*, origin_of, public_key: str, problems: list[str], answer=None):
    """The receiver's rule: RFC 8030's checks, then 201 Created (or what `answer(hit)` gives)."""

    def rule(hit: Hit) -> Reply | int:
        problem = None
        if hit.method != "POST":
            problem = "not a POST"
        elif not (hit.header("TTL") or "").isdigit():
            problem = "no numeric TTL"
        elif (hit.header("Urgency") or "normal") not in URGENCIES:
            problem = "an unknown Urgency"
        elif hit.header("Content-Encoding") != "aes128gcm":
            problem = "not aes128gcm"
        else:
            problem = vapid_problem(hit, origin=origin_of(), public_key=public_key)
        if problem:
            problems.append(problem)
            return 400
        if answer is not None:
            given = answer(hit)
            if given is not None:
                return given
        return Reply(status=201, headers={"Location": f"{origin_of()}/message/{hit.seq}"})

    return rule
