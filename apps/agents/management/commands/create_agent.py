from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from apps.agents.services import create_human_agent
from apps.core import services as core_services
from apps.core.management.commands._base import OperatorCommand
from apps.core.models import Widget


class Command(OperatorCommand):
    help = "Create a human operator of a widget, as if an invitation had been accepted."

    def add_arguments(self, parser):
        parser.add_argument("--widget", required=True, help="numeric id or button_guid")
        parser.add_argument("--email", required=True)
        parser.add_argument("--name", required=True)
        parser.add_argument("--surname", default="")

    def handle(self, *args, widget, email, name, surname, **options):
        try:
            target = core_services.resolve_widget(widget)
        except Widget.DoesNotExist:
            self.fail(f"no widget {widget!r}")
        try:
            validate_email(email)
        except ValidationError:
            self.fail(f"invalid --email: {email!r}")
        if not name.strip():
            self.fail("--name must not be empty")
        agent = create_human_agent(widget=target, email=email, name=name.strip(), surname=surname.strip())
        self.emit_json({"agent_id": agent.pk, "user_id": agent.user_id})
