from django.db import transaction

from apps.core.crypto import rotate_token
from apps.core.management.base import OperatorCommand
from apps.webhooks.models import Endpoint, Subscription


class Command(OperatorCommand):
    help = (
        "Re-encrypt every stored webhook secret (subscriptions, and the endpoints of external operators and compat "
        "bots, their previous secrets included) under the first key of WEBHOOK_SECRET_KEYS; afterwards older keys "
        "can be removed from the setting."
    )

    def handle(self, *args, **options):
        count = 0
        with transaction.atomic():
            for sub in Subscription.objects.select_for_update().exclude(secret_encrypted=""):
                Subscription.objects.filter(pk=sub.pk).update(secret_encrypted=rotate_token(sub.secret_encrypted))
                count += 1
            for endpoint in Endpoint.objects.select_for_update().exclude(secret_encrypted=""):
                previous = endpoint.previous_secret_encrypted
                Endpoint.objects.filter(pk=endpoint.pk).update(
                    secret_encrypted=rotate_token(endpoint.secret_encrypted),
                    previous_secret_encrypted=rotate_token(previous) if previous else "",
                )
                count += 1
        self.emit_json({"rotated": count})
