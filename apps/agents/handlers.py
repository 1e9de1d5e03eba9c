"""Event handlers of the agents app (registered by AgentsConfig.ready())."""

from __future__ import annotations

from apps.core import events

from .services import create_human_agent


def add_owner_agent(event: events.Event) -> None:
    """widget.created: the account's owner becomes the widget's first human agent, in the same
    transaction (a widget never exists without its owner's agent)."""
    account = event.widget.account
    create_human_agent(
        widget=event.widget,
        email=account.user.email,
        name=account.name or account.user.email.split("@")[0],
        surname=account.surname,
        user=account.user,
        is_owner=True,
    )


def register() -> None:
    events.subscribe(events.WIDGET_CREATED, add_owner_agent, phase=events.IN_TRANSACTION)
