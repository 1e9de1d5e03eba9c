from apps.compat.services import rotate_bot_keys
from apps.core.management.base import OperatorCommand


class Command(OperatorCommand):
    help = (
        "Re-encrypt every compat bot's CLIENT_MESSAGE signing secret under the first key of "
        "WEBHOOK_SECRET_KEYS (run with rotate_webhook_keys and rotate_channel_keys); afterwards older "
        "keys can be removed from the setting."
    )

    def handle(self, *args, **options):
        self.emit_json({"rotated": rotate_bot_keys()})
