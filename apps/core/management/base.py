"""Operator commands print machine-readable output on stdout only and exit non-zero with a
one-line reason on stderr when they cannot act."""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand


class OperatorCommand(BaseCommand):
    def create_parser(self, prog_name, subcommand, **kwargs):
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        django_error = parser.error

        def one_line_error(message):
            # From the command line a usage error is one line on stderr and exit 2, like every
            # other refusal; from call_command Django's CommandError stays.
            if parser.called_from_command_line:
                sys.stderr.write(f"{subcommand}: {message}\n")
                sys.exit(2)
            django_error(message)

        parser.error = one_line_error
        return parser

    def emit_json(self, payload: dict) -> None:
        self.stdout.write(json.dumps(payload, ensure_ascii=False))

    def fail(self, reason: str) -> None:
        sys.stderr.write(reason.strip().splitlines()[0] + "\n")
        sys.exit(2)
