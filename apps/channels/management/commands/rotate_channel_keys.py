from apps.channels.services import rotate_custom_channel_keys
from apps.core.management.base import OperatorCommand


class Command(OperatorCommand):
    help = (
        "Re-encrypt every stored channel secret (custom channels, messenger tokens, VK communities) "
        "under the first key of WEBHOOK_SECRET_KEYS "
        "(run with rotate_webhook_keys); afterwards older keys can be removed from the setting."
    )

    def handle(self, *args, **options):
        self.emit_json({"rotated": rotate_custom_channel_keys()})
