from django.apps import AppConfig


class AiConfig(AppConfig):
    name = "apps.ai"
    label = "ai"
    verbose_name = "AI configuration"

    def ready(self) -> None:
        from apps.core import events, outbound

        # A malformed AI_PRIVATE_HOSTS stops start-up (ImproperlyConfigured names the entry) rather
        # than the first provider call.
        outbound.ai_private_hosts()
        from apps.widget import selectors as widget_selectors

        from . import config, selectors

        # Every write to the AI configuration changes its version (the workers' per-process copy).
        config.connect()
        # The widget app reports `credential_missing` in its translation status through this.
        widget_selectors.register_credential_check(selectors.has_widget_wide_credential)
        # The visitor config's `online` counts the AI as someone who answers (chats sits below).
        from apps.chats import selectors as chat_selectors

        chat_selectors.register_machine_answerer("ai", selectors.answers_visitors)
        _register_signing_binding(selectors)
        # Each visitor message gets the AI operator's worker task once it commits.
        events.subscribe(events.MESSAGE_CREATED, _message_created, phase=events.ON_COMMIT)
        # The AI operator's hand-over summary waits on the provider: its task is sent once the
        # hand-over has committed.
        events.subscribe(events.CHAT_AWAITING_HUMAN, _awaiting_human, phase=events.ON_COMMIT)
        # The knowledge base (a layer below) embeds and reports through these.
        from apps.kb import services as kb_services

        from .retrieval import KbHooks

        kb_services.register_ai_hooks(KbHooks())
        # /metrics reports the depth and the oldest task of the AI reply tasks' queue (runtime.QUEUE,
        # named here: the runtime loads on the first visitor message).
        from apps.core import metrics

        metrics.watch_queue("ai")


def _message_created(*args, **kwargs):
    """The runtime (and the vendor SDKs under it, ~2 s of imports) loads on the first visitor
    message, not in every process's start-up."""
    from . import runtime

    return runtime.message_created(*args, **kwargs)


def _awaiting_human(event) -> None:
    from . import assist  # assist reads the runtime: see _message_created

    assist.on_awaiting_human(event)


def _register_signing_binding(selectors) -> None:
    """The signed application-assistant endpoints find the bound token and secret through the core's
    signed-envelope verifier (apps.core.signed, from the support branch), when it is present."""
    import importlib
    import importlib.util

    if importlib.util.find_spec("apps.core.signed") is None:
        return
    signed = importlib.import_module("apps.core.signed")

    def lookup(widget):
        found = selectors.get_signing_binding(widget)
        return None if found is None else signed.SigningBinding(token_id=found[0], secret=found[1])

    signed.register_binding_lookup(lookup)
