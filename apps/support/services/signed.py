"""Support writes of the signed application endpoints: ticket intake and status, account link and revoke."""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.core import crypto, idempotency
from apps.core.errors import Conflict, ValidationFailed
from apps.core.models import IdempotencyKey, Widget
from apps.core.ratelimit import Budget
from apps.platform.numbers import MAX_ID

from ..models import ChatAccount, SupportConfig, Ticket

# --- signed application endpoints: ticket intake and status, account link ------------------------------

APP_CHANNEL = "app"
INTAKE_PER_WIDGET = Budget("support_ticket_intake_widget", 60, 60)
INTAKE_PER_ACCOUNT = Budget("support_ticket_intake_account", 10, 3600)
IDENTITY_MAX = {
    "email_code": timedelta(hours=24),
    "agent_code": timedelta(hours=24),
    "cabinet": timedelta(hours=12),
    "telegram_link": timedelta(days=7),
    "app_ticket": timedelta(days=37),
}
GRANT_MAX = timedelta(minutes=30)
STATUS_MAX_TICKETS = 20


class ChatBoundToOtherAccount(Conflict):
    """The chat is bound to another application account; it is unchanged."""

    code, title = "chat_bound_to_other_account", "Chat bound to another account"


class TargetNotSupportedYet(ValidationFailed):
    """Account-link targets a messenger user, which is not supported yet."""

    code, title = "target_not_supported_yet", "Target not supported yet"


def _request_key(endpoint: str, request_id: str) -> str:
    """The idempotency key of a signed call: its endpoint and `request_id` (up to 128 characters)
    as a derived key, which no `X-Service-Idempotency-Key` can equal."""
    return idempotency.derived_key(endpoint, request_id)


def remembered(*, widget: Widget, endpoint: str, request_id: str) -> dict | None:
    """The answer of an earlier call with this `request_id` within 24 h."""
    return idempotency.answer_of(widget=widget, key=_request_key(endpoint, request_id))


def _claim_request(*, widget: Widget, endpoint: str, request_id: str) -> IdempotencyKey | dict:
    """Inside the call's transaction: claim its `request_id`, or the answer an earlier call left."""
    return idempotency.claim_or_answer(
        widget=widget, key=_request_key(endpoint, request_id), method="POST", path=f"/api/v1/ai/assistant/{endpoint}"
    )


def _widget_lock(widget: Widget) -> SupportConfig:
    """The per-widget lock of ticket numbering and account binding: the support configuration row."""
    config, _ = SupportConfig.objects.get_or_create(widget=widget)
    return SupportConfig.objects.select_for_update().get(pk=config.pk)


def _app_room(*, widget: Widget, user_id: str, email: str, locale: str) -> Chat:
    account = (
        ChatAccount.objects.select_related("chat")
        .filter(widget=widget, app_user_id=user_id, chat__channel=APP_CHANNEL)
        .first()
    )
    if account is not None:
        return account.chat
    contact = chat_services.create_contact(widget=widget, name=f"app user {user_id}"[:255], locale=locale)
    return chat_services.get_or_create_room(widget=widget, contact=contact, channel=APP_CHANNEL, source="app_ticket")


def file_ticket(*, widget: Widget, data: dict) -> dict:
    """The signed ticket intake: idempotent on `request_id` for 24 h; 60 per minute per widget and 10
    per hour per account; one room (channel `app`) and one open ticket per account (a further
    intake appends its message to the open ticket). The service never contacts the customer."""
    request_id, user_id = data["request_id"], data["account"]["user_id"]
    previous = remembered(widget=widget, endpoint="tickets", request_id=request_id)
    if previous is not None:
        return previous
    INTAKE_PER_WIDGET.check(widget.pk, detail="At most 60 ticket intakes per minute for this widget.")
    INTAKE_PER_ACCOUNT.check(widget.pk, user_id, detail="At most 10 ticket intakes per hour for this account.")
    with transaction.atomic():
        _widget_lock(widget)
        claim = _claim_request(widget=widget, endpoint="tickets", request_id=request_id)
        if isinstance(claim, dict):
            return claim
        now = timezone.now()
        client = data.get("client") or {}
        chat = _app_room(
            widget=widget, user_id=user_id, email=data["account"].get("email", ""), locale=client.get("locale", "")
        )
        message = chat_services.post_client_message(
            widget=widget,
            contact=chat.contact,
            data=chat_services.MessageInput(body=data["message"]),
            channel=APP_CHANNEL,
            source="app_ticket",
        )
        ticket = Ticket.objects.filter(widget=widget, app_user_id=user_id, state=Ticket.State.OPEN).first()
        created = ticket is None
        if created:
            last = Ticket.objects.filter(widget=widget).order_by("-number").values_list("number", flat=True).first()
            earlier = list(
                Ticket.objects.filter(widget=widget, app_user_id=user_id)
                .order_by("number")
                .values_list("number", flat=True)
            )
            ticket = Ticket.objects.create(
                widget=widget,
                number=(last or 0) + 1,
                chat=chat,
                app_user_id=user_id,
                source=data["source"],
                category=data["category"],
                subject=data.get("subject", ""),
                opening_message=message,
                previous_numbers=earlier,
                context={k: data[k] for k in ("context", "refund", "client", "in_reply_to") if data.get(k) is not None},
                created_at=now,
                updated_at=now,
            )
        else:
            ticket.updated_at = now
            ticket.save(update_fields=["updated_at"])
        account, _ = ChatAccount.objects.get_or_create(widget=widget, chat=chat)
        account.link, account.link_source, account.app_user_id = ChatAccount.Link.VERIFIED, "app_ticket", user_id
        account.identity_expires_at = now + IDENTITY_MAX["app_ticket"]
        account.hidden_until_intake = False
        account.email = None  # always null for app-ticket chats
        account.updated_at = now
        account.save()
        answer = {"number": ticket.number, "state": ticket.state, "chat_id": chat.pk, "created": created}
        idempotency.record(claim, status=200, answer=answer)
    return answer


def ticket_status(*, widget: Widget, user_id: str, cursors: list[dict] | None) -> dict:
    """Human support replies after each cursor, for at most 20 tickets of the account; numbers of
    other accounts (or none) come back in `not_found`, as do those of a chat whose contact is under
    erasure (apps.erasure: it reads as missing from the moment the erasure is accepted). Read-only."""
    own = Ticket.objects.filter(widget=widget, app_user_id=user_id).live()
    if cursors is None:
        wanted = {t.number: 0 for t in own.order_by("-number")[:STATUS_MAX_TICKETS]}
    else:
        wanted = {c["number"]: c.get("after_message_id") or 0 for c in cursors}
    # A number past MAX_ID names no ticket; it is left out of the query (SQLite cannot bind it).
    tickets = {t.number: t for t in own.filter(number__in=[n for n in wanted if n <= MAX_ID])}
    out, not_found = [], []
    for number, after in wanted.items():
        ticket = tickets.get(number)
        if ticket is None:
            not_found.append(number)
            continue
        floor = max(after, (ticket.opening_message_id or 0))
        replies = Message.objects.filter(
            chat_id=ticket.chat_id,
            widget_id=widget.pk,
            author_kind=Message.Author.AGENT,
            visibility=Message.Visibility.PUBLIC,
            id__gt=floor,
        ).order_by("id")[:100]
        out.append(
            {
                "number": number,
                "state": ticket.state,
                "reason": ticket.reason or None,
                "replies": [{"id": m.pk, "text": m.body, "created_at": m.created_at.isoformat()} for m in replies],
            }
        )
    return {"tickets": out, "not_found": not_found}


def _target_chats(*, widget: Widget, target: dict) -> list[Chat]:
    if "telegram_user" in target:
        raise TargetNotSupportedYet("A messenger user cannot be linked yet.", errors={"target": ["Not supported yet."]})
    # A chat whose contact is under erasure is missing here too: nothing binds it to an account.
    found = Chat.objects.filter(widget=widget).live()
    if "chat_id" in target:
        chats = list(found.filter(pk=target["chat_id"]))
    elif "ticket" in target:
        chats = list(found.filter(support_tickets__number=target["ticket"]).distinct())
    else:
        chats = list(found.filter(contact__guid=target["widget_visitor"]))
    if not chats:
        from apps.core.errors import NotFound

        raise NotFound()
    return chats


def link_account(*, widget: Widget, data: dict) -> dict:
    """Bind the target's chats to the application account (signed account-link). A chat bound to
    another account is 409 and nothing changes; the same account extends; identity and grant are
    clamped to the method's lifetime and 30 minutes. Idempotent on `request_id` for 24 h."""
    previous = remembered(widget=widget, endpoint="account-link", request_id=data["request_id"])
    if previous is not None:
        return previous
    with transaction.atomic():
        _widget_lock(widget)
        claim = _claim_request(widget=widget, endpoint="account-link", request_id=data["request_id"])
        if isinstance(claim, dict):
            return claim
        now = timezone.now()
        chats = _target_chats(widget=widget, target=data["target"])
        user_id = data["account"]["app_user_id"]
        accounts = {a.chat_id: a for a in ChatAccount.objects.select_for_update().filter(chat__in=chats)}
        for chat in chats:
            account = accounts.get(chat.pk)
            if account is None or account.hidden_until_intake:
                continue
            live = account.identity_expires_at is not None and account.identity_expires_at > now
            if account.app_user_id and account.app_user_id != user_id and live:
                raise ChatBoundToOtherAccount("The chat is bound to another account.", chat_id=chat.pk)
        method = data["method"]
        identity = min(data["identity_expires_at"], now + IDENTITY_MAX[method])
        grant = min(data["grant"]["expires_at"], now + GRANT_MAX)
        bound = []
        for chat in chats:
            account = accounts.get(chat.pk) or ChatAccount(widget=widget, chat=chat)
            if account.hidden_until_intake:
                continue  # link `none`: never bound to an account (until the next signed intake)
            bound.append(chat.pk)
            account.link, account.link_source, account.app_user_id = ChatAccount.Link.VERIFIED, method, user_id
            account.identity_expires_at, account.grant_expires_at = identity, grant
            account.grant_token_encrypted = crypto.encrypt_secret(data["grant"]["token"])
            account.verification_ref = data.get("verification_ref") or None
            account.email = data["account"].get("email") or account.email
            if chat.channel == APP_CHANNEL:
                account.email = None
            account.updated_at = now
            account.save()
        answer = {
            "bound": bool(bound),
            "chat_ids": bound,
            "identity_expires_at": identity.isoformat(),
            "grant_expires_at": grant.isoformat(),
        }
        idempotency.record(claim, status=200, answer=answer)
    return answer


def revoke_account(*, widget: Widget, data: dict) -> dict:
    """Clear identity, read grant and confirmed mailbox of the target's chats (every chat of a
    widget_visitor); an app-ticket chat also hides the proven account until the next intake."""
    previous = remembered(widget=widget, endpoint="account-link/revoke", request_id=data["request_id"])
    if previous is not None:
        return previous
    with transaction.atomic():
        _widget_lock(widget)
        claim = _claim_request(widget=widget, endpoint="account-link/revoke", request_id=data["request_id"])
        if isinstance(claim, dict):
            return claim
        now = timezone.now()
        chats = _target_chats(widget=widget, target=data["target"])
        revoked = 0
        for account in ChatAccount.objects.select_for_update().filter(chat__in=chats).select_related("chat"):
            if account.app_user_id is None and account.link != ChatAccount.Link.VERIFIED:
                continue
            revoked += 1
            account.link, account.identity_expires_at, account.grant_expires_at = ChatAccount.Link.ANONYMOUS, None, None
            account.grant_token_encrypted, account.verification_ref = "", None
            account.email = None
            # A pending e-mail code would prove the mailbox again: it goes with the identity.
            account.code_hash, account.code_email, account.code_expires_at = "", "", None
            account.email_requested = False
            if account.chat.channel == APP_CHANNEL or account.link_source == "app_ticket":
                account.hidden_until_intake = True
            else:
                account.app_user_id, account.link_source = None, None
            account.updated_at = now
            account.save()
        answer = {"bound": False, "revoked": revoked}
        idempotency.record(claim, status=200, answer=answer)
    return answer
