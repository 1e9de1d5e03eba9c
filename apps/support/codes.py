"""E-mail codes of a chat (`chat.account`; rule 8 of the support reply rules).

The chat proves a customer's mailbox with a code: it asks for the mailbox (`email_requested`), mails
a 6-digit code when the mailbox arrives in one of the customer's messages, and checks a code the
customer types. A code works for 10 minutes and MAX_ATTEMPTS wrong tries; at most CODES_PER_HOUR
codes are mailed per chat. A right code makes the chat `verified` by `email_code` for 24 h with the
mailbox as its confirmed e-mail; the service never binds it to an application account itself
(only the signed account-link does).

Rule 8:
- a code typed while a person handles the chat is still checked, silently (the service never
  answers a code in the chat, whoever handles it); the result shows in `chat.account`
  (`last_code_result`, `last_code_at`, `link`);
- while an agent handles the chat (`agent_handles_chat`: an active lease, a support action on the
  open ticket, an open ticket held for the owner, or an agent reply in the 24 h before the
  customer's message unless the customer then chose the assistant) the chat sends no codes: a
  request is answered `suppressed`, a mailbox arriving then mails nothing.

Only a keyed hash of the code is stored (HMAC-SHA256 under SECRET_KEY, bound to the chat), and
neither the code nor the mailbox it went to is shown: the support API shows the customer messages
that carried them redacted (`redact`).

Entry points: `request_code` (the chat's assistant asks for it through the internal event
`chat.code_requested`, handled in `on_code_requested`) and `on_client_message` (message.created,
in the message's transaction).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import datetime, timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone

from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.core.events import Event
from apps.core.links import emails_in
from apps.core.models import Widget

from .models import ChatAccount, SupportAction, SupportClaim, Ticket

CODE_VALIDITY = timedelta(minutes=10)
IDENTITY_AFTER_CODE = timedelta(hours=24)
AGENT_REPLY_WINDOW = timedelta(hours=24)
MAX_ATTEMPTS = 5
CODES_PER_HOUR = 3
MESSAGE_IDS_KEPT = 50
_CODE_RE = re.compile(r"\s*([0-9]{3})[ -]?([0-9]{3})\s*")

# Outcomes of request_code and of a mailbox's arrival.
SENT, REQUESTED, SUPPRESSED, RATE_LIMITED, ALREADY_VERIFIED = (
    "sent",
    "email_requested",
    "suppressed",
    "rate_limited",
    "already_verified",
)
CODE_HIDDEN, EMAIL_HIDDEN = "[code hidden]", "[e-mail hidden]"


def code_digest(chat_id: int, code: str) -> str:
    """The stored form of a code: HMAC-SHA256 under SECRET_KEY over the chat id and the code."""
    key = hashlib.sha256(b"support-email-code:" + settings.SECRET_KEY.encode()).digest()
    return hmac.new(key, f"{chat_id}:{code}".encode(), hashlib.sha256).hexdigest()


def typed_code(body: str) -> str | None:
    """The 6 digits of a message that is a code (`123456`, `123 456` or `123-456`), else None."""
    match = _CODE_RE.fullmatch(body or "")
    return match.group(1) + match.group(2) if match else None


def agent_handles_chat(*, chat: Chat, at: datetime) -> bool:
    """Rule 8's condition at `at` (the customer's message or the request): an active support lease,
    an open ticket held for the owner or acted on through the support API since it was opened, or
    an agent's reply in the 24 h before `at` unless the customer chose the assistant afterwards
    (the chat moved from the person to the AI: handling `human_to_ai`)."""
    claim = SupportClaim.objects.filter(chat=chat).first()
    if claim is not None and claim.is_active(at):
        return True
    ticket = Ticket.objects.filter(widget_id=chat.widget_id, chat=chat, state=Ticket.State.OPEN).first()
    if ticket is not None:
        if ticket.held_for_owner:
            return True
        # A write of the support API naming the ticket (the app's own signed calls are no agent's).
        acted = SupportAction.objects.filter(
            widget_id=chat.widget_id,
            ticket_number=ticket.number,
            outcome__in=[SupportAction.Outcome.OK, SupportAction.Outcome.PENDING],
            method="POST",
            created_at__gte=ticket.created_at,
        ).exclude(kind__startswith="assistant.")
        if acted.exists():
            return True
    if chat.handling == Chat.Handling.HUMAN_TO_AI:
        return False
    return Message.objects.filter(
        chat_id=chat.pk,
        widget_id=chat.widget_id,
        author_kind=Message.Author.AGENT,
        created_at__gte=at - AGENT_REPLY_WINDOW,
        created_at__lte=at,
    ).exists()


def _account(*, widget: Widget, chat: Chat) -> ChatAccount:
    account, _ = ChatAccount.objects.select_for_update().get_or_create(widget=widget, chat=chat)
    return account


def _live_identity(account: ChatAccount, now: datetime) -> bool:
    return (
        account.link == ChatAccount.Link.VERIFIED
        and account.identity_expires_at is not None
        and account.identity_expires_at > now
    )


def _remember_message(account: ChatAccount, message_id: int) -> None:
    account.code_message_ids = [*account.code_message_ids, message_id][-MESSAGE_IDS_KEPT:]


def _mail_code(*, account: ChatAccount, chat: Chat, email: str, now: datetime) -> str:
    """Mail a fresh code to `email` (after the transaction commits). The caller holds the account row."""
    sent_recently = [t for t in account.code_sent_at if datetime.fromisoformat(t) > now - timedelta(hours=1)]
    if len(sent_recently) >= CODES_PER_HOUR:
        account.last_code_result, account.last_code_at = "rate_limited", now
        return RATE_LIMITED
    code = f"{secrets.randbelow(10**6):06d}"
    account.code_hash = code_digest(chat.pk, code)
    account.code_email = email
    account.code_attempts = 0
    account.code_expires_at = now + CODE_VALIDITY
    account.code_sent_at = [*sent_recently, now.isoformat()]
    account.email_requested = False
    if not _live_identity(account, now):
        account.link = ChatAccount.Link.AWAITING_CODE
    subject = "Your verification code"
    body = f"Your code: {code}\n\nType it in the chat within 10 minutes. Never share it with anyone."
    transaction.on_commit(lambda: send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, [email], fail_silently=True))
    return SENT


@transaction.atomic
def request_code(*, widget: Widget, chat: Chat, email: str | None = None, now: datetime | None = None) -> str:
    """The chat asks to prove the customer's mailbox: mails a code to `email`, or, without one,
    marks the chat `email_requested` (the code is mailed when the mailbox arrives in a customer's
    message). Sends nothing while an agent handles the chat (`suppressed`) or while an identity
    holds (`already_verified`). Locks the chat row."""
    now = now or timezone.now()
    chat = chat_services.lock_chat(widget=widget, chat=chat)
    if agent_handles_chat(chat=chat, at=now):
        return SUPPRESSED
    account = _account(widget=widget, chat=chat)
    if account.hidden_until_intake or _live_identity(account, now):
        return ALREADY_VERIFIED
    if email:
        outcome = _mail_code(account=account, chat=chat, email=email.strip().lower(), now=now)
    else:
        account.email_requested, outcome = True, REQUESTED
        account.link = ChatAccount.Link.AWAITING_CODE
    account.updated_at = now
    account.save()
    return outcome


def code_pending(account: ChatAccount, now: datetime) -> bool:
    """A code can still be typed: mailed, unused, not expired, attempts left."""
    return (
        bool(account.code_hash)
        and account.code_expires_at is not None
        and account.code_expires_at > now
        and account.code_attempts < MAX_ATTEMPTS
    )


def _check_code(account: ChatAccount, *, chat: Chat, code: str, now: datetime) -> str | None:
    """The result of a typed code, or None when the chat has no code to check it against."""
    if not account.code_hash:
        return None
    right = hmac.compare_digest(account.code_hash, code_digest(chat.pk, code))
    if account.code_expires_at is None:  # the code was used
        return "consumed" if right else None
    if now >= account.code_expires_at:
        return "expired"
    if account.code_attempts >= MAX_ATTEMPTS:
        return "attempts_exhausted"
    if not right:
        account.code_attempts += 1
        return "wrong" if account.code_attempts < MAX_ATTEMPTS else "attempts_exhausted"
    account.code_expires_at = None
    account.email_requested = False
    if _live_identity(account, now):
        # An identity bound meanwhile stays as the integrating backend set it: the code proves a
        # mailbox, never an account.
        account.code_email = ""
        return "verified"
    # A lapsed binding is not revived by a mailbox: no account is inferred.
    account.app_user_id, account.grant_token_encrypted, account.grant_expires_at = None, "", None
    account.verification_ref = None
    account.link, account.link_source = ChatAccount.Link.VERIFIED, "email_code"
    account.identity_expires_at = now + IDENTITY_AFTER_CODE
    account.email = account.code_email
    account.code_email = ""
    return "verified"


def on_client_message(event: Event) -> None:
    """message.created, in the message's transaction: a customer's code is checked (whoever handles
    the chat, silently: nothing is posted), a mailbox the chat asked for gets a code unless an agent
    handles the chat. Costs no query unless the message could be a code or holds an `@`."""
    chat, message = event.obj("chat"), event.obj("message")
    if chat is None or message is None or message.author_kind != Message.Author.CLIENT:
        return
    body = message.body or ""
    code = typed_code(body)
    if code is None and "@" not in body:
        return
    account = ChatAccount.objects.select_for_update().filter(widget=event.widget, chat=chat).first()
    if account is None or account.hidden_until_intake:
        return
    now = message.created_at
    if code is not None:
        result = _check_code(account, chat=chat, code=code, now=now)
        if result is None:
            return
        account.last_code_result, account.last_code_at = result, now
    else:
        if not account.email_requested:
            return
        emails = sorted(emails_in(body))
        if not emails or agent_handles_chat(chat=chat, at=now):
            return
        _mail_code(account=account, chat=chat, email=emails[0], now=now)
    _remember_message(account, message.pk)
    account.updated_at = now
    account.save()


def on_code_requested(event: Event) -> None:
    """chat.code_requested (internal, emitted by the chat's assistant): `request_code`."""
    chat = Chat.objects.filter(widget=event.widget, pk=event.data.get("chat_id")).first()
    if chat is not None:
        request_code(widget=event.widget, chat=chat, email=event.data.get("email") or None)


def redact(text: str, *, message_id: int, account: ChatAccount | None) -> str:
    """A customer message as the support API shows it: a code is never shown, nor a mailbox the
    chat mailed a code to."""
    if account is None or message_id not in account.code_message_ids:
        return text
    if typed_code(text) is not None:
        return CODE_HIDDEN
    for email in emails_in(text):
        text = re.sub(re.escape(email), EMAIL_HIDDEN, text, flags=re.I)
    return text
