from django.apps import AppConfig


class AiConfig(AppConfig):
    name = "apps.ai"
    label = "ai"
    verbose_name = "AI configuration"

    def ready(self) -> None:
        from apps.core import events, ports
        from apps.platform import outbound

        # A malformed AI_PRIVATE_HOSTS stops start-up (ImproperlyConfigured names the entry) rather
        # than the first provider call.
        outbound.ai_private_hosts()
        from . import config, selectors

        # A change of an AI operator's agent row changes the AI configuration's version (the
        # workers' per-process copy); the AI app's own writes change it in apps.ai.services.
        events.subscribe(events.AGENT_PROFILE_CHANGED, config.agent_changed, phase=events.IN_TRANSACTION)
        # What the apps below ask of this one (apps.core.ports): the widget app's translation status
        # (`credential_missing`), the visitor config's `online` (the AI answers as a machine), the
        # signed-envelope verifier's binding and the knowledge base's embedder and assistants.
        ports.provide(ports.WIDGET_CREDENTIAL, selectors.has_widget_wide_credential)
        ports.provide(ports.MACHINE_ANSWERER, selectors.answers_visitors, key="ai")
        ports.provide(ports.SIGNING_BINDING, _signing_binding)
        from .retrieval import KbHooks

        ports.provide(ports.KB_AI, KbHooks())
        # Each visitor message gets the AI operator's worker task once it commits.
        events.subscribe(events.MESSAGE_CREATED, _message_created, phase=events.ON_COMMIT)
        # The AI operator's hand-over summary waits on the provider: its task is sent once the
        # hand-over has committed.
        events.subscribe(events.CHAT_AWAITING_HUMAN, _awaiting_human, phase=events.ON_COMMIT)
        # /metrics reports the depth and the oldest task of the AI reply tasks' queue (runtime.QUEUE,
        # named here: the runtime loads on the first visitor message).
        from apps.platform import metrics

        metrics.watch_queue("ai")


def _message_created(*args, **kwargs):
    """The runtime (and the vendor SDKs under it, ~2 s of imports) loads on the first visitor
    message, not in every process's start-up."""
    from . import runtime

    return runtime.message_created(*args, **kwargs)


def _awaiting_human(event) -> None:
    from . import assist  # assist reads the runtime: see _message_created

    assist.on_awaiting_human(event)


def _signing_binding(widget):
    """The widget's integration binding as the signed-envelope verifier (apps.core.signed) needs it."""
    from apps.core.signed import SigningBinding

    from . import selectors

    found = selectors.get_signing_binding(widget)
    return None if found is None else SigningBinding(token_id=found[0], secret=found[1])
