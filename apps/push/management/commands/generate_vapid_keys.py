"""Print a new VAPID key pair in the environment's format (docs/operating/configuration.md "Web Push")."""

from __future__ import annotations

import base64

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from django.core.management.base import BaseCommand


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def new_pair() -> tuple[str, str]:
    """(private, public): the P-256 private key's 32 raw bytes and the public key's uncompressed
    point (the browser's applicationServerKey), both base64url without padding."""
    key = ec.generate_private_key(ec.SECP256R1())
    private = key.private_numbers().private_value.to_bytes(32, "big")
    public = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    return b64url(private), b64url(public)


class Command(BaseCommand):
    help = "Print a new VAPID key pair for Web Push as VAPID_PRIVATE_KEY=... and VAPID_PUBLIC_KEY=... lines."

    def handle(self, *args, **options) -> None:
        private, public = new_pair()
        self.stdout.write(f"VAPID_PRIVATE_KEY={private}\nVAPID_PUBLIC_KEY={public}\n")
