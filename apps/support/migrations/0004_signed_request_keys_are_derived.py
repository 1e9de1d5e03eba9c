import base64
from datetime import timedelta

from django.conf import settings
from django.db import migrations
from django.utils import timezone

# Forwards, a signed call's key goes from the 64 hex digits of the SHA-256 of its endpoint and
# `request_id` to apps.core.idempotency.derived_key's spelling: this prefix and the same digest in
# unpadded base64url. Backwards, the other way.
PREFIX = "derived "
SIGNED_PATHS = "/api/v1/ai/assistant/"
HEX = frozenset("0123456789abcdef")
BATCH = 500


def _derived(hex_key: str) -> str:
    return PREFIX + base64.urlsafe_b64encode(bytes.fromhex(hex_key)).decode("ascii").rstrip("=")


def _hex(derived_key: str) -> str:
    encoded = derived_key.removeprefix(PREFIX)
    return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).hex()


def _is_hex_key(key: str) -> bool:
    return len(key) == 64 and set(key) <= HEX


def _is_derived_key(key: str) -> bool:
    return key.startswith(PREFIX)


def _rewrite(apps, *, keep, convert) -> None:
    """Give every signed call's key still inside the retention window its other spelling. Only a
    replaying call stores an answer (a header key's row never holds one), so the answer and the
    signed routes' path pick them out. A row whose new key the widget already holds is deleted: the
    holder has the same call's answer."""
    IdempotencyKey = apps.get_model("core", "IdempotencyKey")
    live = IdempotencyKey.objects.filter(
        created_at__gt=timezone.now() - timedelta(seconds=settings.IDEMPOTENCY_KEY_TTL_SECONDS),
        answer__isnull=False,
        path__startswith=SIGNED_PATHS,
    ).order_by("pk")
    last = 0
    while True:
        rows = list(live.filter(pk__gt=last).only("pk", "widget_id", "key")[:BATCH])
        if not rows:
            return
        last = rows[-1].pk
        rows = [row for row in rows if keep(row.key)]
        for row in rows:
            row.key = convert(row.key)
        taken = set(
            IdempotencyKey.objects.filter(
                widget_id__in={row.widget_id for row in rows}, key__in={row.key for row in rows}
            ).values_list("widget_id", "key")
        )
        IdempotencyKey.objects.filter(pk__in=[row.pk for row in rows if (row.widget_id, row.key) in taken]).delete()
        IdempotencyKey.objects.bulk_update([row for row in rows if (row.widget_id, row.key) not in taken], ["key"])


def derive_signed_keys(apps, schema_editor):
    _rewrite(apps, keep=_is_hex_key, convert=_derived)


def hex_signed_keys(apps, schema_editor):
    _rewrite(apps, keep=_is_derived_key, convert=_hex)


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0006_idempotencykey_answer"),
        ("support", "0003_signed_requests_are_idempotency_keys"),
    ]

    operations = [migrations.RunPython(derive_signed_keys, hex_signed_keys)]
