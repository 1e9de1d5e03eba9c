"""Trigram search over visible message text, tenant-first (PostgreSQL only).

A composite GIN index on (widget_id, body gin_trgm_ops) (btree_gin makes the integer column
GIN-indexable) lets `q` search stay inside one widget: a word common in other widgets but absent
from this one does not scan their rows. Trigrams are character-based, so Cyrillic works.
"""

from django.db import migrations

CREATE = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE EXTENSION IF NOT EXISTS btree_gin",
    "CREATE INDEX IF NOT EXISTS message_search_trgm ON chats_message "
    "USING gin (widget_id, body gin_trgm_ops) WHERE visibility = 'public'",
]
DROP = ["DROP INDEX IF EXISTS message_search_trgm"]


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for sql in CREATE:
            schema_editor.execute(sql)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for sql in DROP:
            schema_editor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [("chats", "0001_initial")]
    operations = [migrations.RunPython(forwards, backwards)]
