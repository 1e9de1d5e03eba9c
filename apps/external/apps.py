from django.apps import AppConfig


class ExternalConfig(AppConfig):
    name = "apps.external"
    label = "external"
    verbose_name = "External operators"

    def ready(self):
        from apps.agents.models import Agent
        from apps.core import ports

        from . import services
        from .models import ENDPOINT_OWNER

        # What the apps below ask of this one (apps.core.ports). A rotation ends when the old
        # endpoint's last queued call settles.
        ports.provide(ports.ENDPOINT_SETTLED, services.finish_drained_rotations, key=ENDPOINT_OWNER)
        # The AI reply worker offers every visitor message to the external operators first.
        ports.provide(ports.EXTERNAL_ANSWERER, services.answer_externally)
        # The visitor config's `online` counts an active external operator as someone who answers.
        ports.provide(ports.MACHINE_ANSWERER, _answers_visitors, key="external")
        # A restored webhook agent follows its operator's lifecycle; a revoked operator's never returns.
        ports.provide(ports.AGENT_RETURN, services.agent_return_status, key=Agent.Type.WEBHOOK)


def _answers_visitors(widget) -> bool:
    from . import services

    return bool(services.answering_operators(widget))
