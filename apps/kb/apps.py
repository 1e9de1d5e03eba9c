from django.apps import AppConfig


class KbConfig(AppConfig):
    name = "apps.kb"
    label = "kb"
    verbose_name = "Knowledge base"

    def ready(self) -> None:
        from apps.platform import metrics

        from . import selectors

        metrics.read_kb_documents(selectors.count_waiting_documents)
