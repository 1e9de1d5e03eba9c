"""`manage.py configure_support --widget ID_OR_GUID --config JSON`: replace the widget's support
configuration whole and print it; exit 2 with a one-line reason when refused (enabling without a
human operator, an allowed token and an IP allowlist, or any invalid entry)."""

from __future__ import annotations

import json

from apps.core import services as core_services
from apps.core.management.base import OperatorCommand
from apps.core.models import Widget

from ...config import ConfigInvalid, config_payload, configure_support


class Command(OperatorCommand):
    help = "Replace a widget's support-agent configuration (JSON) and print it."

    def add_arguments(self, parser):
        parser.add_argument("--widget", required=True, help="numeric id or button_guid")
        parser.add_argument("--config", required=True, help="the whole configuration as a JSON object")

    def handle(self, *args, widget, config, **options):
        try:
            target = core_services.resolve_widget(widget)
        except Widget.DoesNotExist:
            self.fail(f"no widget {widget!r}")
        try:
            data = json.loads(config)
        except ValueError:
            self.fail("--config is not valid JSON")
        try:
            stored = configure_support(widget=target, data=data)
        except ConfigInvalid as exc:
            self.fail(f"refused: {exc}")
        self.emit_json(config_payload(stored))
