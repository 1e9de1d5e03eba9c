from django.db import migrations


class Migration(migrations.Migration):
    """RelayedPush belongs to apps.platform: it leaves the core's state, its table stays
    (apps/platform/migrations/0001_initial.py takes it over)."""

    dependencies = [
        ("core", "0006_idempotencykey_answer"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="RelayedPush")],
            database_operations=[],
        ),
    ]
