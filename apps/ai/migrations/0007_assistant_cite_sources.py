from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('ai', '0006_aisettings_handover_summary'),
    ]

    operations = [
        migrations.AddField(
            model_name='assistant',
            name='cite_sources',
            field=models.BooleanField(default=False),
        ),
    ]
