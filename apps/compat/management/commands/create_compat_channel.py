from apps.compat import services
from apps.core import services as core_services
from apps.core.errors import ValidationFailed
from apps.core.management.base import OperatorCommand
from apps.core.models import Widget


class Command(OperatorCommand):
    help = "Create a channel of the legacy Chat API for a widget; prints its id and its path secret (once)."

    def add_arguments(self, parser):
        parser.add_argument("--widget", required=True, help="numeric id or button_guid")
        parser.add_argument("--url", required=True, help="https URL receiving operator replies")

    def handle(self, *args, widget, url, **options):
        try:
            target = core_services.resolve_widget(widget)
        except Widget.DoesNotExist:
            self.fail(f"no widget {widget!r}")
        try:
            channel_id, secret = services.create_compat_channel(widget=target, url=url)
        except ValidationFailed as exc:
            self.fail(f"invalid --url: {'; '.join((exc.errors or {}).get('url', [exc.detail]))}")
        self.emit_json({"channel_id": channel_id, "secret": secret})
