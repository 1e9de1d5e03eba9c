"""PostgreSQL only: the full-text GIN index keeps a short pending list. Every search scans the whole
list of entries not yet merged into the index; at the default (4 MB) a bulk upload leaves thousands
of rows there until autovacuum merges them, and each lookup of the keyword side reads all of them.
The embedded default (SQLite) has no such index and gets nothing here."""

from django.db import migrations

FORWARD = ["ALTER INDEX kb_chunk_tsv SET (gin_pending_list_limit = 256)"]
BACKWARD = ["ALTER INDEX kb_chunk_tsv RESET (gin_pending_list_limit)"]


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in FORWARD:
            schema_editor.execute(statement)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in BACKWARD:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("kb", "0004_crawl_slices")]
    operations = [migrations.RunPython(forward, backward)]
