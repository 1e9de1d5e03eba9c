from django.db import migrations, models

import apps.ai.models


class Migration(migrations.Migration):
    dependencies = [
        ("ai", "0007_assistant_cite_sources"),
    ]

    operations = [
        migrations.AddField(
            model_name="aisettings",
            name="config_version",
            field=models.BigIntegerField(default=apps.ai.models.new_config_version, editable=False),
        ),
    ]
