"""Every operator message to a channel becomes a delivery of the webhook engine, with its state, its
attempts and their log: a custom channel's go to that channel's endpoint (owner `custom_channel`),
a messenger's to the widget's endpoint of that provider (owner `messenger:<code>`). A pending one
keeps its due time (due at once if it had none) and its idempotency key; a VK one keeps the
`random_id` its earlier attempts were sent with, so VK drops a resend. The channels' own beat entry
goes. Stop the workers of the old release before migrating."""

import json

from django.db import migrations
from django.utils import timezone

CUSTOM_OWNER = "custom_channel"  # apps.channels.delivery, as it is at this migration
MESSENGER_OWNER = "messenger:"
BATCH = 1000


def forwards(apps, schema_editor):
    OutboundDelivery = apps.get_model("apps_channels", "OutboundDelivery")
    OutboundAttempt = apps.get_model("apps_channels", "OutboundAttempt")
    CustomChannel = apps.get_model("apps_channels", "CustomChannel")
    Endpoint = apps.get_model("webhooks", "Endpoint")
    Delivery = apps.get_model("webhooks", "Delivery")
    Attempt = apps.get_model("webhooks", "Attempt")
    now = timezone.now()
    endpoints: dict[tuple[int, str, int], int] = {}

    def endpoint_of(row) -> int:
        if row.custom_channel_id:
            owner, owner_id = CUSTOM_OWNER, row.custom_channel_id
        else:
            owner, owner_id = MESSENGER_OWNER + row.channel, 0
        key = (row.widget_id, owner, owner_id)
        if key not in endpoints:
            found = Endpoint.objects.filter(widget_id=row.widget_id, owner=owner, owner_id=owner_id).first()
            if found is None:
                url = ""
                if row.custom_channel_id:
                    url = CustomChannel.objects.filter(pk=row.custom_channel_id).values_list("url", flat=True).first()
                found = Endpoint.objects.create(
                    widget_id=row.widget_id, owner=owner, owner_id=owner_id, url=url or "", created_at=now, updated_at=now
                )
            endpoints[key] = found.pk
        return endpoints[key]

    last = 0
    while True:
        rows = list(OutboundDelivery.objects.filter(pk__gt=last).order_by("pk")[:BATCH])
        if not rows:
            break
        last = rows[-1].pk
        moved = {}
        for row in rows:
            pending = row.status == "pending"
            body = row.body
            if row.channel == "vk" and not row.custom_channel_id:
                stored = json.loads(body)
                stored.setdefault("random_id", row.pk)
                body = json.dumps(stored, ensure_ascii=False, separators=(",", ":"))
            moved[row.pk] = Delivery.objects.create(
                widget_id=row.widget_id,
                endpoint_id=endpoint_of(row),
                key=row.event_id,
                # a custom channel's receivers saw the event id as X-Service-Delivery too
                delivery_id=row.event_id,
                message_id=row.message_id,
                event_type="message.created",
                status=row.status,
                body=body,
                payload={},
                attempts=row.attempts,
                next_attempt_at=(row.next_attempt_at or now) if pending else None,
                last_status_code=row.last_status_code,
                last_error=row.last_error,
                created_at=row.created_at,
                updated_at=row.updated_at,
            ).pk
        Attempt.objects.bulk_create(
            Attempt(
                delivery_id=moved[attempt.delivery_id],
                number=attempt.number,
                started_at=attempt.started_at,
                duration_ms=attempt.duration_ms,
                status_code=attempt.status_code,
                error=attempt.error,
            )
            for attempt in OutboundAttempt.objects.filter(delivery_id__in=list(moved)).order_by("pk")
        )
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    PeriodicTask.objects.filter(name="channels.sweep_deliveries").delete()


class Migration(migrations.Migration):
    dependencies = [
        ("apps_channels", "0007_verbose_names"),
        ("webhooks", "0006_delivery_message"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [
        migrations.RunPython(forwards, migrations.RunPython.noop, elidable=False),
    ]
