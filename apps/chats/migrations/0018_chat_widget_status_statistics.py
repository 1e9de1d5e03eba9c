"""Tell PostgreSQL's planner how a widget's chats spread over the statuses.

Without it the planner takes the share of open chats across every widget for each one: a large
widget with few open chats among many closed ones (while other widgets keep many open) is
estimated at thousands of open chats, and the console's list of them scans the widget's every
chat instead of reading its open ones from chat_widget_status_activity.
"""

from django.db import migrations


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            "CREATE STATISTICS IF NOT EXISTS chat_widget_status_mcv (mcv) ON widget_id, status FROM chats_chat"
        )
        schema_editor.execute("ANALYZE chats_chat")


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP STATISTICS IF EXISTS chat_widget_status_mcv")


class Migration(migrations.Migration):
    dependencies = [("chats", "0017_chat_merged_from")]
    operations = [migrations.RunPython(forwards, backwards)]
