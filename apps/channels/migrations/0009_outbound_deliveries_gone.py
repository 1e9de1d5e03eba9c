from django.db import migrations


class Migration(migrations.Migration):
    """The channels' own delivery log, moved to the webhook engine by 0008."""

    dependencies = [
        ("apps_channels", "0008_deliveries_to_the_engine"),
    ]

    operations = [
        migrations.DeleteModel(name="OutboundAttempt"),
        migrations.DeleteModel(name="OutboundDelivery"),
    ]
