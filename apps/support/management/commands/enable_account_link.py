"""`manage.py enable_account_link --widget ID_OR_GUID [--off]`: put the widget on (or take it off)
the account-link list; the signed account-link endpoints answer 404 while it is off."""

from __future__ import annotations

from apps.core import services as core_services
from apps.core.management.base import OperatorCommand
from apps.core.models import Widget

from ...config import set_account_link


class Command(OperatorCommand):
    help = "Enable (or with --off disable) the signed account-link endpoints for a widget."

    def add_arguments(self, parser):
        parser.add_argument("--widget", required=True, help="numeric id or button_guid")
        parser.add_argument("--off", action="store_true")

    def handle(self, *args, widget, off, **options):
        try:
            target = core_services.resolve_widget(widget)
        except Widget.DoesNotExist:
            self.fail(f"no widget {widget!r}")
        config = set_account_link(widget=target, enabled=not off)
        self.emit_json({"widget_id": target.pk, "account_link": config.account_link})
