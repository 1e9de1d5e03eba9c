"""Operator commands print machine-readable output on stdout only and exit non-zero with a
one-line reason on stderr when they cannot act."""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand


class OperatorCommand(BaseCommand):
    def emit_json(self, payload: dict) -> None:
        self.stdout.write(json.dumps(payload, ensure_ascii=False))

    def fail(self, reason: str) -> None:
        sys.stderr.write(reason.strip().splitlines()[0] + "\n")
        sys.exit(2)
