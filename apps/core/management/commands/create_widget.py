from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from apps.core import services
from apps.core.management.base import OperatorCommand


class Command(OperatorCommand):
    help = "Create a widget (and the owner's account and own human agent when missing)."

    def add_arguments(self, parser):
        parser.add_argument("--owner-email", required=True)
        parser.add_argument("--name", default="My widget")
        parser.add_argument("--enable-api", action="store_true")

    def handle(self, *args, owner_email, name, enable_api, **options):
        try:
            validate_email(owner_email)
        except ValidationError:
            self.fail(f"invalid --owner-email: {owner_email!r}")
        widget = services.create_widget(owner_email=owner_email, name=name, enable_api=enable_api)
        owner = widget.agents.get(is_owner=True)
        self.emit_json(
            {
                "account_id": widget.account_id,
                "widget_id": widget.pk,
                "button_guid": widget.button_guid,
                "owner_agent_id": owner.pk,
            }
        )
