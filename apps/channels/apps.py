from django.apps import AppConfig


class ChannelsConfig(AppConfig):
    name = "apps.channels"
    label = "apps_channels"
    verbose_name = "Channels and messengers"

    def ready(self):
        from apps.core import events, ports

        # Registers the Celery tasks in every process (the Telegram long poll is sent by name).
        from . import tasks  # noqa: F401
        from .delivery import kinds
        from .handlers import move_external_contacts, queue_outbound_message

        # In the transaction of the message: the delivery row commits with the message or not at all.
        events.subscribe(events.MESSAGE_CREATED, queue_outbound_message, phase=events.IN_TRANSACTION)
        # In the merge's transaction, before the source contact (and its cascade) is deleted.
        events.subscribe(events.CONTACT_MERGED, move_external_contacts, phase=events.IN_TRANSACTION)
        for owner, kind in kinds().items():
            ports.provide(ports.ENDPOINT_KIND, kind, key=owner)

        from apps.platform import metrics

        from . import selectors

        metrics.read_deliveries("channel", selectors.get_pending_deliveries)

        # Departments may name `av__<id>` channels of the widget's ad cabinets (agents' hook).
        from apps.agents import selectors as agent_selectors

        from .cabinets import cabinet_ids

        agent_selectors.AD_CABINET_SOURCE = cabinet_ids
