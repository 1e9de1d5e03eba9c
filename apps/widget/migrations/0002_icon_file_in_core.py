# File moved to the core app (state only: the table and its constraints stay).

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("widget", "0001_initial"),
        ("core", "0002_file"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="widgeticon",
                    name="file",
                    field=models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE, related_name="launcher_icon", to="core.file"
                    ),
                ),
            ],
            database_operations=[],
        ),
    ]
