"""Tell PostgreSQL's planner that a chat's operator decides its widget.

Without it the planner multiplies the share of an operator's chats by the share of the widget's
chats, as if they were independent: an operator with thousands of chats in a widget among millions
of other widgets' chats is estimated at a few hundred, and the console's list of the operator's
chats in every state intersects two whole indexes and sorts all of them instead of walking the
widget's chats newest first until the page is full.
"""

from django.db import migrations


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            "CREATE STATISTICS IF NOT EXISTS chat_agent_widget_dependency (dependencies) "
            "ON widget_id, agent_id FROM chats_chat"
        )
        schema_editor.execute("ANALYZE chats_chat")


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP STATISTICS IF EXISTS chat_agent_widget_dependency")


class Migration(migrations.Migration):
    dependencies = [("chats", "0019_chat_widget_no_own_index")]
    operations = [migrations.RunPython(forwards, backwards)]
