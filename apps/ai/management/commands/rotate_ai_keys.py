from django.db import transaction

from apps.ai.models import Credential, IntegrationBinding
from apps.core.crypto import rotate_token
from apps.core.management.base import OperatorCommand


class Command(OperatorCommand):
    help = (
        "Re-encrypt every stored provider key, credential signing secret and integration secret under the first "
        "key of WEBHOOK_SECRET_KEYS (run with rotate_webhook_keys before removing an old key)."
    )

    def handle(self, *args, **options):
        count = 0
        with transaction.atomic():
            for row in Credential.objects.select_for_update():
                changes = {
                    name: rotate_token(getattr(row, name))
                    for name in ("api_key_encrypted", "signing_secret_encrypted")
                    if getattr(row, name)
                }
                if changes:
                    Credential.objects.filter(pk=row.pk).update(**changes)
                    count += len(changes)
            for binding in IntegrationBinding.objects.select_for_update():
                IntegrationBinding.objects.filter(pk=binding.pk).update(
                    secret_encrypted=rotate_token(binding.secret_encrypted)
                )
                count += 1
        self.emit_json({"rotated": count})
