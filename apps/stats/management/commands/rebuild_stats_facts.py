"""`manage.py rebuild_stats_facts [--widget ID_OR_GUID]`: recompute the statistics facts (per-chat
snapshots and daily rollups) from Chat, Message, Rating and ChatTransfer, one widget per
transaction. Prints one JSON line per widget. For existing data, repairs and bulk-loaded data."""

import time

from apps.core import services as core_services
from apps.core.management.base import OperatorCommand
from apps.core.models import Widget
from apps.stats.facts import rebuild_widget_facts


class Command(OperatorCommand):
    help = "Recompute the statistics facts of one widget (--widget) or of every widget."

    def add_arguments(self, parser):
        parser.add_argument("--widget", help="numeric id or button_guid; every widget when omitted")

    def handle(self, *args, widget=None, **options):
        if widget is not None:
            try:
                widget_ids = [core_services.resolve_widget(widget).pk]
            except Widget.DoesNotExist:
                self.fail(f"no widget {widget!r}")
        else:
            widget_ids = list(Widget.objects.order_by("pk").values_list("pk", flat=True))
        for widget_id in widget_ids:
            started = time.monotonic()
            counts = rebuild_widget_facts(widget_id=widget_id)
            self.emit_json({"widget_id": widget_id, **counts, "seconds": round(time.monotonic() - started, 1)})
