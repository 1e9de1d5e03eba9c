"""Writes on agents, invitations, departments and the agent event log. Other apps create agents
and record agent events only through here.

Seats: a paid seat (Account.seats) is used by every non-banned HUMAN agent of every widget of the
account; AI and webhook operators use none. Seat decisions lock the account row
(`select_for_update`) while counting, so two writers racing for the last seat cannot both win.
Lock order everywhere: invitation -> account -> agent.
"""

from __future__ import annotations

import logging
import math
import secrets
import uuid
from collections.abc import Callable
from datetime import UTC, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.files.base import ContentFile
from django.core.mail import send_mail
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from apps.audit import services as audit
from apps.core import events, ports
from apps.core.auth.tokens import hash_token as hash_token
from apps.core.errors import AppError, Conflict, ValidationFailed
from apps.core.models import Account, Widget
from apps.core.ratelimit import Budget
from apps.core.services import user_with_email

from . import events_log, selectors
from .departments import DAYS as DAYS
from .departments import DEPARTMENT_AUDIT as DEPARTMENT_AUDIT
from .departments import create_department as create_department
from .departments import delete_department as delete_department
from .departments import full_week as full_week
from .departments import set_department_agents as set_department_agents
from .departments import set_department_schedule as set_department_schedule
from .departments import update_department as update_department
from .models import Agent, AgentEvent, Invitation

logger = logging.getLogger(__name__)

INVITATION_BUDGET = Budget("agent_invitations", 10, 3600)
# Changes of one operator's console status (a user in one widget), over all of the user's sockets:
# each writes an agent event and purges the widget's served cache; a person switching by hand never
# comes near it.
STATUS_CHANGE_BUDGET = Budget("agent_status_changes", 30, 60)

INVITATION_TTL = timedelta(days=7)


# --- errors --------------------------------------------------------------------------------------------


class SeatLimitReached(AppError):
    """No paid operator seat is free: free seats must outnumber outstanding invitations to invite,
    and a seat must be free to restore a human agent. Free a seat or add seats to the plan."""

    status, code, title = 409, "seat_limit_reached", "No free seat"


class AgentNotDeletable(AppError):
    """The AI operator and the owner's own agent row cannot be deleted through the API."""

    status, code, title = 409, "agent_not_deletable", "This agent cannot be deleted"


class AgentNotRestorable(AppError):
    """The machine behind the agent is gone for good (a revoked external operator: revoked is final),
    so its agent stays banned. Create a new operator instead."""

    status, code, title = 409, "agent_not_restorable", "This agent cannot be restored"


class MailFailed(AppError):
    """The invitation e-mail could not be sent. Nothing was stored and the idempotency key was
    released; retry later."""

    status, code, title = 502, "mail_failed", "The invitation e-mail could not be sent"


class AvatarStoreFailed(AppError):
    """The avatar could not be written to file storage. Nothing changed; retry later."""

    status, code, title = 502, "avatar_store_failed", "The avatar could not be stored"


class InvitationUnusable(Exception):
    """The invitation link cannot be used: `state` is expired, accepted or revoked."""

    def __init__(self, state: str):
        super().__init__(state)
        self.state = state


# --- helpers ---------------------------------------------------------------------------------------------


def _profile_changed(widget: Widget, agent: Agent) -> None:
    """What the public widget config shows of `agent` changed (the widget app purges its cache; for
    an AI operator, the AI app changes its configuration's version)."""
    events.emit(widget, events.AGENT_PROFILE_CHANGED, objects={"agent": agent}, operator_id=agent.pk)


def _lock_account(widget: Widget) -> Account:
    return Account.objects.select_for_update().get(pk=widget.account_id)


def _lock_agent(widget: Widget, agent: Agent) -> Agent:
    return Agent.objects.select_for_update().get(pk=agent.pk, widget=widget)


# --- the event log ----------------------------------------------------------------------------------------


def record_agent_event(
    *,
    widget: Widget,
    agent: Agent | int,
    type: str | None = None,
    type_code: int | None = None,
    extra: dict | None = None,
) -> AgentEvent:
    """Append one row to an agent's event log.

    Name the action by its slug (`type`, one of apps.agents.events_log.KINDS) or, for actions
    that have no slug yet, by its raw `type_code`; exactly one of the two. `extra` holds the facts
    the console message shows (`chat_id`, ...). Runs in the caller's transaction.
    """
    if (type is None) == (type_code is None):
        raise ValueError("give exactly one of type or type_code")
    code = events_log.code_of(type) if type is not None else int(type_code)
    agent_id = agent if isinstance(agent, int) else agent.pk
    if not isinstance(agent, int):
        assert agent.widget_id == widget.pk, "the agent must belong to the widget"
    return AgentEvent.objects.create(widget=widget, agent_id=agent_id, type_code=code, extra=extra or {})


# --- agents -----------------------------------------------------------------------------------------------


def _new_user(email: str):
    """A user without a password for a new operator. Operators sign in by e-mail and never see
    their username: it is the address when that fits the column and no other user holds it after
    Django's NFKC normalisation of usernames (`ſ` reads as `s`), else a random one."""
    User = get_user_model()
    username = User.normalize_username(email)
    if len(username) > User._meta.get_field("username").max_length or User.objects.filter(username=username).exists():
        username = f"operator-{uuid.uuid4().hex}"
    user = User.objects.create_user(username=username, email=email)
    user.set_unusable_password()
    user.save(update_fields=["password"])
    return user


@transaction.atomic
def create_human_agent(
    *, widget: Widget, email: str, name: str, surname: str = "", user=None, is_owner: bool = False
) -> Agent:
    """A human operator with console access to every chat of the widget.

    Used by widget.created (the owner's own row, apps.agents.handlers), `create_agent` and
    invitation accept.
    Reuses the Django user with that e-mail when one exists; one agent row per user and widget.
    """
    if user is None:
        user = user_with_email(email)
    if user is None:
        user = _new_user(email.lower())
    existing = Agent.objects.filter(widget=widget, user=user).first()
    if existing is not None:
        return existing
    agent = Agent.objects.create(
        widget=widget,
        user=user,
        name=name,
        surname=surname,
        email=email.lower(),
        type=Agent.Type.HUMAN,
        role=Agent.Role.OWNER if is_owner else Agent.Role.OPERATOR,
        is_owner=is_owner,
    )
    _profile_changed(widget, agent)  # a new face for the widget header
    return agent


@transaction.atomic
def set_console_password(*, widget: Widget, agent: Agent, password: str) -> Agent:
    """Set the password a human agent signs in to the operator console with (`create_agent
    --password`; the invitation page sets it otherwise). The caller has validated the password."""
    agent = _lock_agent(widget, agent)
    if agent.type != Agent.Type.HUMAN or agent.user_id is None:
        raise ValueError("only a human agent with a user signs in to the console")
    agent.user.set_password(password)
    agent.user.save(update_fields=["password"])
    return agent


@transaction.atomic
def create_ai_agent(*, widget: Widget, name: str, assistant_id: int, show_in_header: bool = True, status: str) -> Agent:
    """An AI operator's agent row (type `ai`, no user, no seat). Called by apps.ai.services only;
    `status` is one of Agent.Status."""
    agent = Agent.objects.create(
        widget=widget,
        name=name,
        type=Agent.Type.AI,
        status=status,
        show_in_header=show_in_header,
        ai_assistant_id=assistant_id,
    )
    _profile_changed(widget, agent)
    return agent


@transaction.atomic
def update_ai_agent(*, widget: Widget, agent: Agent, changes: dict) -> Agent:
    """Rename, rebind (`ai_assistant_id`), `show_in_header` or `status` of an AI operator's row.
    Called by apps.ai.services only, which checks the values; a change purges the widget cache."""
    agent = _lock_agent(widget, agent)
    assert agent.type == Agent.Type.AI, "only AI operators are updated here"
    changed = [field for field, value in changes.items() if getattr(agent, field) != value]
    if not changed:
        return agent
    for field in changed:
        setattr(agent, field, changes[field])
    agent.save(update_fields=changed)
    if "status" in changed:
        record_agent_event(
            widget=widget, agent=agent, type="restored" if agent.status == Agent.Status.ACTIVE else "suspended"
        )
    _profile_changed(widget, agent)
    return agent


@transaction.atomic
def set_show_in_header(*, widget: Widget, agent: Agent, show_in_header: bool) -> Agent:
    """PATCH {show_in_header}. A change purges the widget cache and is logged; no change, no-op."""
    agent = _lock_agent(widget, agent)
    if agent.show_in_header == show_in_header:
        return agent
    agent.show_in_header = show_in_header
    agent.save(update_fields=["show_in_header"])
    record_agent_event(widget=widget, agent=agent, type="show_in_header_on" if show_in_header else "show_in_header_off")
    _profile_changed(widget, agent)
    return agent


@transaction.atomic
def set_capacity(*, widget: Widget, agent: Agent, capacity: int | None) -> Agent:
    """The open chats routing gives the operator at most (null: the widget's default). A larger
    capacity may let the operator take queued chats (agent.profile_changed's handlers)."""
    agent = _lock_agent(widget, agent)
    if agent.capacity == capacity:
        return agent
    before = agent.capacity
    agent.capacity = capacity
    agent.save(update_fields=["capacity"])
    audit.record_change(
        widget=widget,
        action="agent.changed",
        target_type="agent",
        target_id=agent.pk,
        before={"capacity": before},
        after={"capacity": capacity},
    )
    _profile_changed(widget, agent)
    return agent


@transaction.atomic
def update_agent(*, widget: Widget, agent: Agent, changes: dict) -> Agent:
    """PATCH /v1/agents/{id}: `show_in_header` and `capacity`, in one transaction."""
    if "show_in_header" in changes:
        agent = set_show_in_header(widget=widget, agent=agent, show_in_header=changes["show_in_header"])
    if "capacity" in changes:
        agent = set_capacity(widget=widget, agent=agent, capacity=changes["capacity"])
    return agent


def _ban(widget: Widget, agent: Agent, *, event: str) -> Agent:
    agent = _lock_agent(widget, agent)
    if agent.status == Agent.Status.BANNED:
        return agent
    previous = agent.status
    agent.status = Agent.Status.BANNED
    agent.save(update_fields=["status"])
    record_agent_event(widget=widget, agent=agent, type=event, extra={"previous_status": previous})
    _profile_changed(widget, agent)
    return agent


@transaction.atomic
def suspend_agent(*, widget: Widget, agent: Agent) -> Agent:
    """active or relaxation -> banned; the seat is released. Suspending a banned agent changes
    nothing. The agent stays in its departments."""
    return _ban(widget, agent, event="suspended")


@transaction.atomic
def delete_agent(*, widget: Widget, agent: Agent) -> Agent:
    """Soft delete: -> banned, releasing the seat. Chats, ratings and the event log stay readable
    (the row is kept). Refused for the AI operator and for the owner's own agent row."""
    if agent.type == Agent.Type.AI:
        raise AgentNotDeletable("The AI operator cannot be deleted; manage it through the AI operator endpoints.")
    if agent.is_owner:
        raise AgentNotDeletable("The owner's own agent row cannot be deleted.")
    return _ban(widget, agent, event="deleted")


@transaction.atomic
def restore_agent(*, widget: Widget, agent: Agent) -> Agent:
    """banned -> active, or for a machine agent the status its app gives through the `agent_return`
    port (an external operator's agent: what its lifecycle state gives, `relaxation` while paused or
    testing). 409 seat_limit_reached when a human agent has no free seat; 409 agent_not_restorable
    when the machine behind the agent is gone for good (a revoked external operator); a refusal
    changes nothing. Restoring an agent that is not banned changes nothing."""
    account = _lock_account(widget) if agent.type == Agent.Type.HUMAN else None
    agent = _lock_agent(widget, agent)
    if agent.status != Agent.Status.BANNED:
        return agent
    status = ports.lookup(ports.AGENT_RETURN, key=agent.type)(agent)
    if status is None:
        raise AgentNotRestorable("The operator behind this agent was revoked, which is final; create a new one.")
    if status not in (Agent.Status.ACTIVE, Agent.Status.RELAXATION):
        raise AssertionError(f"agent_return answered {status!r}: active, relaxation or None")
    if account is not None and selectors.seats_used(account) >= account.seats:
        raise SeatLimitReached(f"All {account.seats} seats of the account are in use.")
    agent.status = status
    agent.save(update_fields=["status"])
    record_agent_event(widget=widget, agent=agent, type="restored")
    _profile_changed(widget, agent)
    return agent


@transaction.atomic
def set_agent_status(*, widget: Widget, agent: Agent, status: str) -> Agent:
    """The console's own status switch of a human operator: active <-> relaxation (banned is
    reached only through suspend/delete and left only through restore). The status the agent already has changes
    nothing and spends nothing; a change past STATUS_CHANGE_BUDGET per agent is RateLimited and
    changes nothing."""
    if status not in (Agent.Status.ACTIVE, Agent.Status.RELAXATION):
        raise ValueError("status must be active or relaxation")
    agent = _lock_agent(widget, agent)
    if agent.type != Agent.Type.HUMAN:
        raise Conflict(
            "Only a human operator switches between active and relaxation; "
            "an AI or webhook operator's status follows its own app."
        )
    if agent.status == Agent.Status.BANNED:
        raise Conflict("A banned agent must be restored first.")
    if agent.status == status:
        return agent
    decision = STATUS_CHANGE_BUDGET.consume(widget.pk, agent.pk)
    decision.raise_if_denied(
        f"At most {STATUS_CHANGE_BUDGET.limit} status changes per {int(STATUS_CHANGE_BUDGET.window)} s; "
        f"retry in {max(1, math.ceil(decision.retry_after))} s."
    )
    agent.status = status
    agent.save(update_fields=["status"])
    record_agent_event(widget=widget, agent=agent, type=f"status_{status}")
    _profile_changed(widget, agent)
    return agent


def _delete_file_on_commit(storage, name: str) -> None:
    if name:
        transaction.on_commit(lambda: storage.delete(name))


@transaction.atomic
def set_agent_avatar(*, widget: Widget, agent: Agent, content: bytes, extension: str) -> Agent:
    """Store a checked image (the caller verified type and size) under a random name and make it
    the agent's avatar; the previous file is deleted once this commits."""
    agent = _lock_agent(widget, agent)
    storage, previous = agent.avatar.storage, agent.avatar.name
    name = f"{widget.pk}/{uuid.uuid4().hex}.{extension}"
    try:
        agent.avatar.save(name, ContentFile(content), save=False)
    except Exception:
        logger.exception("avatar store failed", extra={"agent_id": agent.pk})
        raise AvatarStoreFailed() from None
    agent.save(update_fields=["avatar"])
    _delete_file_on_commit(storage, previous)
    record_agent_event(widget=widget, agent=agent, type="avatar_set")
    _profile_changed(widget, agent)
    return agent


@transaction.atomic
def remove_agent_avatar(*, widget: Widget, agent: Agent) -> Agent:
    """Clear the avatar (a no-op without one, still purging the cache)."""
    agent = _lock_agent(widget, agent)
    if agent.avatar:
        _delete_file_on_commit(agent.avatar.storage, agent.avatar.name)
        agent.avatar = None
        agent.save(update_fields=["avatar"])
        record_agent_event(widget=widget, agent=agent, type="avatar_removed")
    _profile_changed(widget, agent)
    return agent


# --- invitations ----------------------------------------------------------------------------------------


def _invitation_mail(*, widget: Widget, email: str, link: str, expires_at) -> None:
    subject = f"Приглашение стать оператором виджета «{widget.name}»"
    body = (
        f"Вас пригласили стать оператором чата на сайте (виджет «{widget.name}»).\n\n"
        f"Чтобы принять приглашение, откройте ссылку и задайте имя и пароль:\n{link}\n\n"
        f"Ссылка действует до {expires_at.astimezone(UTC):%d.%m.%Y %H:%M} UTC и открывается один раз.\n"
        "Если вы не ждали этого письма, просто проигнорируйте его.\n"
    )
    send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, [email], fail_silently=False)


def invitation_link(token: str, *, absolute: Callable[[str], str]) -> str:
    """The absolute accept URL of an invitation: PUBLIC_BASE_URL when configured, else `absolute`
    (the inviting request's `build_absolute_uri`, whose host Django checks against ALLOWED_HOSTS).
    One spelling for the API route and the console's People page."""
    path = reverse("agent-invite", kwargs={"token": token})
    base = getattr(settings, "PUBLIC_BASE_URL", "")
    return f"{base.rstrip('/')}{path}" if base else absolute(path)


def invite_agent(*, widget: Widget, email: str, link_for: Callable[[str], str]) -> Invitation:
    """Invite `email` to become a human operator of `widget`.

    Under the account row lock: refused 409 seat_limit_reached unless the free seats outnumber the
    outstanding invitations of the account. The e-mail (with a random token; only its hash is
    stored) is sent BEFORE anything is stored, so a mail failure (502 mail_failed) leaves nothing
    behind. `link_for(token)` builds the absolute accept URL. At most 10 invitations per hour per
    widget (429), counted before anything else and outside the transaction, so a refused or failed
    invitation still spends its unit.
    """
    _check_mailbox(email)
    INVITATION_BUDGET.check(widget.pk, detail="At most 10 invitations per hour per widget.")
    return _invite(widget=widget, email=email, link_for=link_for)


def _check_mailbox(email: str) -> None:
    """SECURITY: the invitation mail goes wherever the address points. An IP literal
    (`a@[10.0.0.5]`) or a bare host name (`root@localhost`, which Django's validator lets through)
    would have our mail relay open SMTP connections to hosts the tenant picks, internal ones
    included; an invitee's mailbox is at an internet domain."""
    domain = email.rpartition("@")[2]
    if domain.startswith("[") or "." not in domain.strip("."):
        raise ValidationFailed(
            errors={"email": ["Must be an address at an internet domain, not at an IP address or a local host."]}
        )


@transaction.atomic
def _invite(*, widget: Widget, email: str, link_for: Callable[[str], str]) -> Invitation:
    account = _lock_account(widget)
    now = timezone.now()
    free = account.seats - selectors.seats_used(account)
    outstanding = selectors.outstanding_invitations(account, now=now)
    if free <= outstanding:
        raise SeatLimitReached(
            f"{max(free, 0)} free seat(s) and {outstanding} outstanding invitation(s): no seat left to invite into."
        )
    token = secrets.token_urlsafe(32)
    expires_at = now + INVITATION_TTL
    try:
        _invitation_mail(widget=widget, email=email, link=link_for(token), expires_at=expires_at)
    except Exception:
        logger.exception("invitation mail failed", extra={"widget_id": widget.pk})
        raise MailFailed() from None
    return Invitation.objects.create(
        widget=widget, email=email, token_hash=hash_token(token), created_at=now, expires_at=expires_at
    )


@transaction.atomic
def revoke_invitation(*, widget: Widget, invitation: Invitation) -> Invitation:
    """Revoke an outstanding invitation (its link stops working and its seat reservation ends).
    An accepted, expired or already revoked invitation is left as it is; the access an accepted
    invitation gave is revoked only in the web cabinet."""
    invitation = Invitation.objects.select_for_update().get(pk=invitation.pk, widget=widget)
    if invitation.state() == "pending":
        invitation.revoked_at = timezone.now()
        invitation.save(update_fields=["revoked_at"])
    return invitation


def existing_user_for(invitation: Invitation):
    """The Django user the invitation would attach to, when one exists with a usable password
    (the accept page then asks for that password instead of setting a new one)."""
    user = user_with_email(invitation.email)
    return user if user is not None and user.has_usable_password() else None


@transaction.atomic
def accept_invitation(*, token: str, name: str, surname: str = "", password: str | None = None) -> Agent:
    """Follow an invitation link: the invitee becomes a human operator of the widget.

    Raises InvitationUnusable (expired, accepted, revoked; `missing` for an unknown token) and
    SeatLimitReached when a restore took the reserved seat meanwhile. `password` is set on the
    user (None when the page verified an existing user's own password instead).
    """
    invitation = Invitation.objects.select_for_update().filter(token_hash=hash_token(token)).first()
    if invitation is None:
        raise InvitationUnusable("missing")
    state = invitation.state()
    if state != "pending":
        raise InvitationUnusable(state)
    widget = invitation.widget
    account = _lock_account(widget)
    user = user_with_email(invitation.email)
    current = Agent.objects.select_for_update().filter(widget=widget, user=user).first() if user else None
    needs_seat = current is None or current.status == Agent.Status.BANNED
    if needs_seat and selectors.seats_used(account) >= account.seats:
        raise SeatLimitReached(f"All {account.seats} seats of the account are in use.")
    agent = create_human_agent(widget=widget, email=invitation.email, name=name, surname=surname, user=user)
    if agent.status == Agent.Status.BANNED:
        agent.status = Agent.Status.ACTIVE
        agent.save(update_fields=["status"])
    if password is not None:
        agent.user.set_password(password)
        agent.user.save(update_fields=["password"])
    invitation.accepted_at = timezone.now()
    invitation.agent = agent
    invitation.save(update_fields=["accepted_at", "agent"])
    record_agent_event(widget=widget, agent=agent, type="invitation_accepted", extra={"invitation_id": invitation.pk})
    _profile_changed(widget, agent)
    return agent
