"""The retention job's index of settled deliveries (apps.webhooks.retention). On PostgreSQL it is
built with CREATE INDEX CONCURRENTLY, so the engine keeps writing the table meanwhile; should the
build fail, drop the invalid index it leaves (`DROP INDEX CONCURRENTLY delivery_settled_updated`)
and migrate again."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class AddIndexConcurrentlyOnPostgreSQL(AddIndexConcurrently):
    """`AddIndexConcurrently` on PostgreSQL, a plain `AddIndex` on the other databases."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)
        else:
            migrations.AddIndex.database_forwards(self, app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)
        else:
            migrations.AddIndex.database_backwards(self, app_label, schema_editor, from_state, to_state)


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY runs outside a transaction

    dependencies = [
        ("webhooks", "0006_delivery_message"),
    ]

    operations = [
        AddIndexConcurrentlyOnPostgreSQL(
            model_name="delivery",
            index=models.Index(
                condition=models.Q(("status__in", ["delivered", "failed", "skipped"])),
                fields=["widget", "updated_at"],
                name="delivery_settled_updated",
            ),
        ),
    ]
