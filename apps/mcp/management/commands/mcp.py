"""`manage.py mcp --token-env NAME`: the MCP server over stdin and stdout, for a desktop assistant
that starts it as a subprocess, acting as the API token in the environment variable NAME (never on
the command line, where other local users could read it)."""

from __future__ import annotations

import os

import anyio

from apps.core.errors import AppError
from apps.core.management.base import OperatorCommand
from apps.mcp import registry, server


class Command(OperatorCommand):
    help = "Serve the MCP server over stdio as the API token held in the environment variable --token-env."

    def add_arguments(self, parser):
        parser.add_argument(
            "--token-env",
            required=True,
            metavar="NAME",
            help="the environment variable holding the API token (e.g. CHATWIDGET_TOKEN)",
        )

    def handle(self, *args, token_env, **options):
        credential = os.environ.get(token_env, "").strip()
        if not credential:
            self.fail(f"the environment variable {token_env} holds no API token")
        try:
            registry.Context.authenticate(credential)
        except AppError as err:
            self.fail(f"the API token in {token_env} does not authenticate: {err.detail}")
        registry.load()  # the tools' schemas before the first message, not during it
        anyio.run(server.serve_stdio, credential)
