from django.contrib.auth import password_validation
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction

from apps.agents.services import create_human_agent, set_console_password
from apps.core import services as core_services
from apps.core.management.base import OperatorCommand
from apps.core.models import Widget


class Command(OperatorCommand):
    help = "Create a human operator of a widget, as if an invitation had been accepted."

    def add_arguments(self, parser):
        parser.add_argument("--widget", required=True, help="numeric id or button_guid")
        parser.add_argument("--email", required=True)
        parser.add_argument("--name", required=True)
        parser.add_argument("--surname", default="")
        parser.add_argument(
            "--password", default=None, help="the operator console password (otherwise the invitation page sets it)"
        )

    def handle(self, *args, widget, email, name, surname, password=None, **options):
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
        if password is not None:
            try:
                password_validation.validate_password(password)
            except ValidationError as exc:
                self.fail(f"invalid --password: {' '.join(exc.messages)}")
        with transaction.atomic():
            agent = create_human_agent(widget=target, email=email, name=name.strip(), surname=surname.strip())
            if password is not None:
                agent = set_console_password(widget=target, agent=agent, password=password)
        self.emit_json({"agent_id": agent.pk, "user_id": agent.user_id})
