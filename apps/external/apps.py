from django.apps import AppConfig


class ExternalConfig(AppConfig):
    name = "apps.external"
    label = "external"
    verbose_name = "External operators"

    def ready(self):
        from apps.ai import services as ai_services
        from apps.webhooks import services as webhooks

        from . import services
        from .models import ENDPOINT_OWNER

        # A rotation ends when the old endpoint's last queued call settles.
        webhooks.on_endpoint_settled(ENDPOINT_OWNER, services.finish_drained_rotations)
        # The AI reply worker offers every visitor message to the external operators first.
        ai_services.register_external_answerer(services.answer_externally)
        # The visitor config's `online` counts an active external operator as someone who answers.
        from apps.chats import selectors as chat_selectors

        chat_selectors.register_machine_answerer("external", lambda widget: bool(services.answering_operators(widget)))
