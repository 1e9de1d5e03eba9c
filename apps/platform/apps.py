from django.apps import AppConfig
from django.conf import settings


class PlatformConfig(AppConfig):
    """The machinery room. It imports no other app; the apps above reach it, never the reverse."""

    name = "apps.platform"
    label = "platform"

    def ready(self) -> None:
        if settings.USING_POSTGRES:
            send_lists_in_binary()


def send_lists_in_binary() -> None:
    """Python lists go to PostgreSQL as binary arrays (psycopg's `ListBinaryDumper` registered last
    for `list`, so a `%s` placeholder picks it). Django's bulk_create sends each column as one array
    (`INSERT ... SELECT * FROM UNNEST(%s::type[], ...)`), and so do the webhook engine's statements.
    In the text format psycopg quotes every element and escapes each of its quotes with a regular
    expression in Python, and a webhook's JSON body is full of quotes. A binary array carries each
    element's bytes with their length, escaped nowhere. Registered on psycopg's global adapters before
    Django builds its connections' adapters from them (at the first connection)."""
    import psycopg
    from psycopg.types.array import ListBinaryDumper

    psycopg.adapters.register_dumper(list, ListBinaryDumper)
