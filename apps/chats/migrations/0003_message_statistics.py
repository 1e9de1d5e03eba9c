"""Tell PostgreSQL's planner that chat_id determines widget_id on messages.

Without it the planner multiplies the two filters' selectivities, underestimates a chat's rows by
the number of widgets, and switches the transcript's keyset chunks to a plan that re-reads and
sorts the rest of a large chat for every chunk.
"""

from django.db import migrations


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            "CREATE STATISTICS IF NOT EXISTS message_chat_widget_dependency (dependencies) "
            "ON chat_id, widget_id FROM chats_message"
        )
        schema_editor.execute("ANALYZE chats_message")


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP STATISTICS IF EXISTS message_chat_widget_dependency")


class Migration(migrations.Migration):
    dependencies = [("chats", "0002_search_index")]
    operations = [migrations.RunPython(forwards, backwards)]
