from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("ai", "0005_credential_embedding_model"),
    ]

    operations = [
        migrations.AddField(
            model_name="aisettings",
            name="handover_summary",
            field=models.BooleanField(default=True),
        ),
    ]
