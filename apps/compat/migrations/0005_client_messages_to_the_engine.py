"""Every bot gets its webhook-engine endpoint (its URL and signing secret), and every CLIENT_MESSAGE
becomes a delivery of that endpoint with its state, attempt count and last answer. A message still
pending is due at once: the engine's sweeper sends it (with its idempotency key, the same `id` the
bot saw if an earlier attempt reached it). Stop the workers of the old release before migrating."""

from django.db import migrations
from django.utils import timezone

OWNER = "compat_bot"  # apps.compat.services.ENDPOINT_OWNER, as it is at this migration


def forwards(apps, schema_editor):
    CompatBot = apps.get_model("compat", "CompatBot")
    CompatBotDelivery = apps.get_model("compat", "CompatBotDelivery")
    Endpoint = apps.get_model("webhooks", "Endpoint")
    Delivery = apps.get_model("webhooks", "Delivery")
    now = timezone.now()
    for bot in CompatBot.objects.filter(endpoint=None).order_by("pk"):
        endpoint = Endpoint.objects.create(
            widget_id=bot.widget_id,
            owner=OWNER,
            owner_id=bot.pk,
            url=bot.url,
            secret_encrypted=bot.signing_secret_encrypted,
            created_at=bot.created_at,
            updated_at=now,
        )
        CompatBot.objects.filter(pk=bot.pk).update(endpoint=endpoint)
    endpoints = dict(CompatBot.objects.values_list("pk", "endpoint_id"))
    for row in CompatBotDelivery.objects.filter(delivery=None).order_by("pk").iterator():
        pending = row.status == "pending"
        delivery = Delivery.objects.create(
            widget_id=row.widget_id,
            endpoint_id=endpoints[row.bot_id],
            key=row.event_id,
            message_id=row.message_id,
            event_type="CLIENT_MESSAGE",
            status=row.status,
            body=row.body,
            payload={},
            attempts=row.attempts,
            next_attempt_at=now if pending else None,
            last_status_code=row.last_status_code,
            last_error=row.last_error,
            created_at=row.created_at,
            updated_at=row.updated_at,
        )
        CompatBotDelivery.objects.filter(pk=row.pk).update(delivery=delivery)


class Migration(migrations.Migration):
    dependencies = [
        ("compat", "0004_engine_links"),
        ("webhooks", "0006_delivery_message"),
    ]

    operations = [
        migrations.RunPython(forwards, migrations.RunPython.noop, elidable=False),
    ]
