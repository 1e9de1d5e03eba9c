import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    """The links to the webhook engine, empty until 0005 fills them."""

    dependencies = [
        ("compat", "0003_verbose_names"),
        ("webhooks", "0005_verbose_names"),
    ]

    operations = [
        migrations.AddField(
            model_name="compatbot",
            name="endpoint",
            field=models.OneToOneField(
                null=True, on_delete=django.db.models.deletion.PROTECT, related_name="+", to="webhooks.endpoint"
            ),
        ),
        migrations.AddField(
            model_name="compatbotdelivery",
            name="delivery",
            field=models.OneToOneField(
                null=True, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="webhooks.delivery"
            ),
        ),
    ]
