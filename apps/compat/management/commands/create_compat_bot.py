from apps.compat import services
from apps.core import services as core_services
from apps.core.errors import ValidationFailed
from apps.core.management.base import OperatorCommand
from apps.core.models import Widget


class Command(OperatorCommand):
    help = (
        "Create a bot of the legacy Bot API for a widget; prints its path token and the secret its "
        "CLIENT_MESSAGE posts are signed with (both once) and its operator id."
    )

    def add_arguments(self, parser):
        parser.add_argument("--widget", required=True, help="numeric id or button_guid")
        parser.add_argument("--url", required=True, help="https URL receiving CLIENT_MESSAGE events")

    def handle(self, *args, widget, url, **options):
        try:
            target = core_services.resolve_widget(widget)
        except Widget.DoesNotExist:
            self.fail(f"no widget {widget!r}")
        try:
            bot, token, signing_secret = services.create_compat_bot(widget=target, url=url)
        except ValidationFailed as exc:
            self.fail(f"invalid --url: {'; '.join((exc.errors or {}).get('url', [exc.detail]))}")
        self.emit_json({"bot_token": token, "agent_id": bot.agent_id, "signing_secret": signing_secret})
