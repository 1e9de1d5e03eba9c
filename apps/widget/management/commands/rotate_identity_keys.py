from apps.core.management.base import OperatorCommand
from apps.widget.services import rotate_identity_secret_keys


class Command(OperatorCommand):
    help = (
        "Re-encrypt every stored identity secret (identity verification; the previous ones too) under the "
        "first key of WEBHOOK_SECRET_KEYS (run with rotate_webhook_keys); afterwards older keys can be removed "
        "from the setting."
    )

    def handle(self, *args, **options):
        self.emit_json({"rotated": rotate_identity_secret_keys()})
