from django.apps import AppConfig


class AiConfig(AppConfig):
    name = "apps.ai"
    label = "ai"
    verbose_name = "AI configuration"

    def ready(self) -> None:
        from apps.widget import selectors as widget_selectors

        from . import selectors

        # The widget app reports `credential_missing` in its translation status through this.
        widget_selectors.register_credential_check(selectors.has_widget_wide_credential)
