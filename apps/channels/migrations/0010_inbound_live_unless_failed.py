from django.db import migrations


def live_unless_failed(apps, schema_editor):
    """Connections whose registration did not fail take hook calls: those of providers without a
    webhook mechanism or with an unverified one, and VK's hook row (its communities authenticate)."""
    MessengerConnection = apps.get_model("apps_channels", "MessengerConnection")
    MessengerConnection.objects.filter(webhook_status__in=["not_supported", "unconfirmed_provider_api"]).update(
        inbound_live=True
    )
    MessengerConnection.objects.filter(provider="vk").update(inbound_live=True)


class Migration(migrations.Migration):
    dependencies = [
        ("apps_channels", "0009_outbound_deliveries_gone"),
    ]

    operations = [
        migrations.RunPython(live_unless_failed, migrations.RunPython.noop),
    ]
