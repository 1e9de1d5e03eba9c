from apps.channels.cabinets import create_ad_cabinet
from apps.core import services as core_services
from apps.core.management.base import OperatorCommand
from apps.core.models import Widget


class Command(OperatorCommand):
    help = "Create an ad-marketplace cabinet of a widget (status disabled), as the interactive cabinet flow does."

    def add_arguments(self, parser):
        parser.add_argument("--widget", required=True, help="numeric id or button_guid")
        parser.add_argument("--name", required=True)

    def handle(self, *args, widget, name, **options):
        try:
            target = core_services.resolve_widget(widget)
        except Widget.DoesNotExist:
            self.fail(f"no widget {widget!r}")
        name = name.strip()
        if not name or len(name) > 255:
            self.fail("--name must be 1 to 255 characters")
        self.emit_json({"cabinet_id": create_ad_cabinet(widget=target, name=name).pk})
