"""Writes on agents. Other apps create agents only through here."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction

from apps.core.models import Widget

from .models import Agent


@transaction.atomic
def create_human_agent(
    *, widget: Widget, email: str, name: str, surname: str = "", user=None, is_owner: bool = False
) -> Agent:
    """A human operator with console access to every chat of the widget.

    Used by `create_widget` (the owner's own row), `create_agent` and, later, invitation accept.
    Reuses the Django user with that e-mail when one exists; one agent row per user and widget.
    """
    User = get_user_model()
    if user is None:
        user = User.objects.filter(email__iexact=email).first()
    if user is None:
        user = User.objects.create_user(username=email.lower(), email=email.lower())
        user.set_unusable_password()
        user.save(update_fields=["password"])
    existing = Agent.objects.filter(widget=widget, user=user).first()
    if existing is not None:
        return existing
    return Agent.objects.create(
        widget=widget,
        user=user,
        name=name,
        surname=surname,
        email=email.lower(),
        type=Agent.Type.HUMAN,
        role=Agent.Role.OWNER if is_owner else Agent.Role.OPERATOR,
        is_owner=is_owner,
    )
