from django.conf import settings

from apps.core.management.base import OperatorCommand
from apps.platform import metrics


class Command(OperatorCommand):
    help = (
        "Empty PROMETHEUS_MULTIPROC_DIR (the per-process files /metrics sums) before the web and worker "
        'processes of a host start, as prometheus-client asks; prints {"removed": N}. Never while they run: '
        "their counters would restart from zero."
    )

    def handle(self, *args, **options):
        self.emit_json({"removed": metrics.reset(settings.PROMETHEUS_MULTIPROC_DIR)})
