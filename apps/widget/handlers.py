"""Event handlers of the widget app: the served widget cache follows every change the public config
shows (registered by WidgetConfig.ready()).

The cache is purged twice: inside the change's transaction, so the answer of the request that made
the change never precedes the purge, and again after commit, so a visitor request that ran between
the first purge and the commit cannot keep the old state cached under the new generation.
"""

from __future__ import annotations

from apps.core import events
from apps.core.models import Widget

from .cache import purge_widget_cache

PURGING_EVENTS = (events.AGENT_PROFILE_CHANGED, events.ACCOUNT_PROFILE_CHANGED, events.WIDGET_CONFIG_CHANGED)


def _widget_ids(event: events.Event) -> list[int]:
    if event.type == events.ACCOUNT_PROFILE_CHANGED:  # the account's name shows in all its widgets
        return list(Widget.objects.filter(account_id=event.data["account_id"]).values_list("pk", flat=True))
    return [event.widget.pk]


def purge_config_cache(event: events.Event) -> None:
    for widget_id in _widget_ids(event):
        purge_widget_cache(widget_id=widget_id)


def register() -> None:
    events.subscribe(PURGING_EVENTS, purge_config_cache, phase=events.IN_TRANSACTION)
    events.subscribe(PURGING_EVENTS, purge_config_cache, phase=events.ON_COMMIT)
