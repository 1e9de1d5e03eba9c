"""Column decoding on PostgreSQL.

Django 5.2 registers its own `timestamptz` loader on every psycopg 3 connection: a Python subclass
of psycopg's loader that parses the text in Python and then sets the zone. psycopg's C loader (from
`psycopg-binary`) is only used for the classes it knows by name, so every timestamp the ORM read
would go through the Python parser, several values a row on the chat list.

When the connection's zone is UTC (Django's default: `DATABASES[...]["TIME_ZONE"]` unset), the C
loader gives exactly what Django's does: an aware datetime with `datetime.UTC` (psycopg
maps the session's `TimeZone` `UTC` to that object, and Django sets the session to `UTC`). This
registers a loader that hands each value to psycopg's C loader on such connections; any other zone,
or psycopg without its C module, keeps Django's loader.
"""

from __future__ import annotations

import datetime

import psycopg
from psycopg.adapt import Loader
from psycopg.pq import Format
from psycopg.types.datetime import TimestamptzLoader as PythonTimestamptzLoader

TIMESTAMPTZ_OID = psycopg.postgres.types["timestamptz"].oid
# psycopg's default adapters hold the C class when psycopg-binary (or psycopg-c) is installed.
C_TIMESTAMPTZ_LOADER = psycopg.adapters.get_loader(TIMESTAMPTZ_OID, Format.TEXT)
HAVE_C_LOADER = C_TIMESTAMPTZ_LOADER is not PythonTimestamptzLoader


class UtcTimestamptzLoader(Loader):
    # Django compares this with the connection's zone on every cursor (DatabaseWrapper.create_cursor).
    timezone = datetime.UTC

    def __init__(self, oid, context=None):
        super().__init__(oid, context)
        # The C class cannot be subclassed. Its bound `load` goes on the instance, so psycopg's row
        # loop calls C directly, without a Python frame per value.
        self._c_loader = C_TIMESTAMPTZ_LOADER(oid, context)
        self.load = self._c_loader.load

    def load(self, data):
        return self._c_loader.load(data)


def use_c_timestamptz_loader(sender, connection, **kwargs) -> None:
    if not HAVE_C_LOADER or connection.vendor != "postgresql" or connection.timezone is not datetime.UTC:
        return
    raw = connection.connection
    if raw.adapters.get_loader(TIMESTAMPTZ_OID, Format.TEXT) is UtcTimestamptzLoader:
        # A pooled connection keeps its adapters: this runs at every checkout (every request of a
        # web process), and registering again copied the connection's loader map each time.
        return
    if raw.info.parameter_status("TimeZone") != "UTC":
        return
    raw.adapters.register_loader("timestamptz", UtcTimestamptzLoader)
