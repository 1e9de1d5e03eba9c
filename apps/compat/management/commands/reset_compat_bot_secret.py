from apps.compat import services
from apps.compat.models import CompatBot
from apps.core.management.base import OperatorCommand


class Command(OperatorCommand):
    help = "Give a compat bot a new CLIENT_MESSAGE signing secret (the old one stops at once); prints it once."

    def add_arguments(self, parser):
        parser.add_argument("--bot", required=True, type=int, help="the bot's numeric id")

    def handle(self, *args, bot, **options):
        found = CompatBot.objects.filter(pk=bot).first()
        if found is None:
            self.fail(f"no compat bot {bot}")
        self.emit_json({"bot_id": found.pk, "signing_secret": services.reset_bot_signing_secret(bot=found)})
