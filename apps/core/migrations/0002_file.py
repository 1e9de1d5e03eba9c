# The File model moves from the chats app to the core: state only, the table (chats_file) stays.

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("core", "0001_initial"),
        ("chats", "0006_visitorupload"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="File",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("stored", models.FileField(max_length=300, upload_to="files/%Y/%m/")),
                        ("original_name", models.CharField(max_length=255)),
                        ("content_type", models.CharField(default="application/octet-stream", max_length=255)),
                        ("size", models.PositiveBigIntegerField()),
                        ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                        (
                            "widget",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE, related_name="files", to="core.widget"
                            ),
                        ),
                    ],
                    options={
                        "db_table": "chats_file",
                        "indexes": [models.Index(fields=["widget", "-created_at"], name="file_widget_created")],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
