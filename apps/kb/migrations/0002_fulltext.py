"""PostgreSQL only: the keyword side's stored tsvector (Russian and English stems by the `russian`
configuration, exact words by `simple`) and its GIN index, tenant first (btree_gin), so a
search reads only the tenant's matching rows. The embedded default (SQLite) ranks by a
Python BM25 instead (apps.kb.index) and gets nothing here."""

from django.db import migrations

FORWARD = [
    "CREATE EXTENSION IF NOT EXISTS btree_gin",
    "ALTER TABLE kb_kbchunk ADD COLUMN tsv tsvector GENERATED ALWAYS AS "
    "(to_tsvector('russian'::regconfig, content) || to_tsvector('simple'::regconfig, content)) STORED",
    "CREATE INDEX kb_chunk_tsv ON kb_kbchunk USING gin (widget_id, tsv)",
]
BACKWARD = ["DROP INDEX IF EXISTS kb_chunk_tsv", "ALTER TABLE kb_kbchunk DROP COLUMN IF EXISTS tsv"]


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in FORWARD:
            schema_editor.execute(statement)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in BACKWARD:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("kb", "0001_initial")]
    operations = [migrations.RunPython(forward, backward)]
