# File moved to the core app (state only: the table chats_file and its constraints stay).

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("chats", "0006_visitorupload"),
        ("core", "0002_file"),
        ("widget", "0002_icon_file_in_core"),
        ("billing", "0002_document_file_in_core"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="message",
                    name="file",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="core.file",
                    ),
                ),
                migrations.AlterField(
                    model_name="visitorupload",
                    name="file",
                    field=models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="visitor_upload",
                        serialize=False,
                        to="core.file",
                    ),
                ),
                migrations.DeleteModel(name="File"),
            ],
            database_operations=[],
        ),
    ]
