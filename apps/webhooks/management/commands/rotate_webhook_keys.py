from django.db import transaction

from apps.core.management.commands._base import OperatorCommand
from apps.webhooks.crypto import rotate_token
from apps.webhooks.models import Subscription


class Command(OperatorCommand):
    help = (
        "Re-encrypt every stored webhook secret under the first key of WEBHOOK_SECRET_KEYS; "
        "afterwards older keys can be removed from the setting."
    )

    def handle(self, *args, **options):
        count = 0
        with transaction.atomic():
            for sub in Subscription.objects.select_for_update().exclude(secret_encrypted=""):
                Subscription.objects.filter(pk=sub.pk).update(secret_encrypted=rotate_token(sub.secret_encrypted))
                count += 1
        self.emit_json({"rotated": count})
