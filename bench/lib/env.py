"""Django set-up for the benchmark processes (the driver, not the measured server).

The benchmarks need PostgreSQL (DATABASE_URL); SQLite is refused with a clear message, because
the issue's figures (trigram search, COPY floor, row counts in the millions) only mean something
there.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def setup_django() -> None:
    """Configure Django in this process with the project's settings (idempotent)."""
    # Run as `python bench/<name>.py`, the bench folder comes first on sys.path, where
    # bench/channels.py would hide the `channels` package (Django Channels) from Django's imports.
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    # The driver's own API calls (SQL checks) share the token's budget with the measured server.
    os.environ["API_RATE_LIMIT_PER_MINUTE"] = "1000000000"
    import django

    django.setup()


def postgres_problem() -> str | None:
    """Why the benchmarks cannot run here, or None when DATABASE_URL names PostgreSQL."""
    if not os.environ.get("DATABASE_URL"):
        return "DATABASE_URL is not set: the benchmarks need PostgreSQL (e.g. postgres://user@host:5432/db)"
    setup_django()
    from django.db import connection

    if connection.vendor != "postgresql":
        return f"DATABASE_URL names {connection.vendor}, not PostgreSQL: the benchmarks refuse to run on it"
    return None


def migrations_pending() -> bool:
    """True when DATABASE_URL lacks some of the project's migrations."""
    setup_django()
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    return bool(executor.migration_plan(executor.loader.graph.leaf_nodes()))
