from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("kb", "0003_crawler"),
    ]

    operations = [
        migrations.AddField(
            model_name="kbcrawlrun",
            name="slices",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="kbcrawlrun",
            name="frontier",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
