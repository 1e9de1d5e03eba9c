import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    """RelayedPush joins the platform's state on the table core created (core_relayedpush)."""

    initial = True

    dependencies = [
        ("core", "0007_relayedpush_to_platform"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="RelayedPush",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("groups", models.JSONField()),
                        ("frame", models.JSONField()),
                        ("created_at", models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                    ],
                    options={"db_table": "core_relayedpush"},
                ),
            ],
            database_operations=[],
        ),
    ]
