"""The signed application-assistant endpoints of the support surface: ticket intake and status,
account link and revoke. Authenticated by the bound token and the signed envelope of
apps.core.signed (no idempotency header: the nonce protects from replay, `request_id` makes the
writes idempotent for 24 h)."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from apps.chats.selectors import client_address
from apps.core import signed
from apps.core.api.serializers import (
    InputSerializer,
    StrictCharField,
    StrictEmailField,
    StrictIntegerField,
    StrictRegexField,
)
from apps.core.api.views import ScopedAPIView
from apps.core.auth.authentication import TokenPrincipal
from apps.core.errors import NotFound

from .. import services
from ..models import SupportAction, SupportConfig

USER_ID = r"^[A-Za-z0-9_.:@-]{1,128}$"
REQUEST_ID = r"^[A-Za-z0-9_.:-]{1,128}$"
SIGNED_PROBLEMS = [401, 403, 409, 413, 415, 422, 429, 503]


class SignedAssistantView(ScopedAPIView):
    """SECURITY: authentication -> rate limit -> api_enabled and `ai:write` -> `available()` (404
    while off) -> the signed envelope (bound token, signature, timestamp, nonce) -> the action.

    Audited like every support action: each call that names a token leaves one `SupportAction`
    row (kind `assistant.<audit_name>`), refused ones included (signature, scope, 404 while off,
    validation, limits, conflicts), written after the action's transaction so a refused write rolls
    back its work, never its audit row. Texts are kept as SHA-256 and length only."""

    abstract = True
    route_scopes = {"post": ["ai:write"]}
    problem_statuses = {"post": SIGNED_PROBLEMS}
    audit_name = ""

    def available(self, request) -> bool:
        return True

    def initial(self, request, *args, **kwargs):
        self.audit = {}
        super().initial(request, *args, **kwargs)

    def validated(self, serializer_class, **kwargs):
        data = super().validated(serializer_class, **kwargs)
        self.audit.update(audit_of_input(data))
        return data

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if isinstance(getattr(request, "_user", None), TokenPrincipal) and getattr(request, "_auth", None) is not None:
            record_signed_call(
                request=request,
                response=response,
                kind=f"assistant.{self.audit_name}",
                audit=getattr(self, "audit", {}),
            )
        return response

    def check_permissions(self, request):
        super().check_permissions(request)
        if not self.available(request):
            raise NotFound()
        # The raw bytes are read before the parser runs (Django keeps them for it).
        signed.verify(
            widget=request.widget,
            token=request.auth,
            meta=request.META,
            method=request.method,
            path=request.path,
            body=request._request.body,
        )


def audit_of_input(data: dict) -> dict:
    """What the audit keeps of a signed call's validated body: its `request_id`, the ticket or chat
    it names and the intake message as SHA-256 and length (never the text, the grant or the e-mail)."""
    audit = {"idempotency_key": data.get("request_id", "")}
    target = data.get("target") or {}
    if "chat_id" in target:
        audit["chat_id"] = target["chat_id"]
    if "ticket" in target:
        audit["ticket_number"] = target["ticket"]
    if "message" in data:
        audit["text_sha256"], audit["text_length"] = services.text_digest(data["message"])
    return audit


def record_signed_call(*, request, response, kind: str, audit: dict) -> SupportAction:
    """One audit row for one signed call, with its outcome (`refused` with the problem code for
    any answer of 400 or more)."""
    token = request.auth
    data = getattr(response, "data", None)
    refused = response.status_code >= 400
    if not refused and isinstance(data, dict):
        if isinstance(data.get("chat_id"), int):
            audit.setdefault("chat_id", data["chat_id"])
        if isinstance(data.get("number"), int):
            audit.setdefault("ticket_number", data["number"])
    return SupportAction.objects.create(
        widget_id=token.widget_id,
        token_id=token.pk,
        token_prefix=token.prefix,
        kind=kind[:32],
        method=request.method,
        path=request.path[:500],
        client_address=client_address(request)[:64],
        idempotency_key=(audit.get("idempotency_key") or "")[:64],
        chat_id=audit.get("chat_id"),
        ticket_number=audit.get("ticket_number"),
        text_sha256=audit.get("text_sha256", ""),
        text_length=audit.get("text_length"),
        outcome=SupportAction.Outcome.REFUSED if refused else SupportAction.Outcome.OK,
        status_code=response.status_code,
        reason=((data.get("code") if isinstance(data, dict) else "") or "")[:64] if refused else "",
        finished_at=timezone.now(),
    )


class ContractField(serializers.ChoiceField):
    def __init__(self, **kwargs):
        super().__init__(choices=["v1"], **kwargs)


class AccountRefInput(InputSerializer):
    user_id = StrictRegexField(USER_ID, help_text="The application account's id.")
    email = StrictEmailField(required=False, max_length=254, help_text="The account's e-mail address; optional.")


class ClientInput(InputSerializer):
    platform = StrictCharField(max_length=32, required=False, help_text="The client platform, up to 32 characters.")
    app_version = StrictCharField(
        max_length=32, required=False, help_text="The application's version, up to 32 characters."
    )
    locale = StrictRegexField(
        r"^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})?$", required=False, help_text="The customer's language tag."
    )


class RefundInput(InputSerializer):
    order_id = StrictCharField(max_length=128, help_text="The order the refund is asked for.")
    reason = StrictCharField(max_length=500, required=False, help_text="Why, up to 500 characters; optional.")


class TicketIntakeInput(InputSerializer):
    contract = ContractField(help_text="`v1`.")
    request_id = StrictRegexField(
        REQUEST_ID, help_text="Your id of this request: a repeat within 24 h answers the same."
    )
    source = serializers.ChoiceField(choices=["app", "web", "bot"], help_text="`app`, `web` or `bot`.")
    category = serializers.ChoiceField(
        choices=["billing", "technical", "account", "other"],
        help_text="`billing`, `technical`, `account` or `other`.",
    )
    message = StrictCharField(min_length=1, max_length=4000, help_text="The customer's message, 1 to 4000 characters.")
    subject = StrictCharField(max_length=200, required=False, help_text="The subject, up to 200 characters; optional.")
    in_reply_to = StrictIntegerField(
        min_value=1, required=False, help_text="The number of an earlier ticket this one follows; optional."
    )
    account = AccountRefInput(help_text="The application account the ticket is for.")
    client = ClientInput(required=False, help_text="The customer's client; optional.")
    context = serializers.DictField(required=False, help_text="What the application knows, by name; optional.")
    refund = RefundInput(required=False, help_text="A refund request; optional.")


class TicketCursorInput(InputSerializer):
    number = StrictIntegerField(min_value=1, help_text="A ticket's number.")
    after_message_id = StrictIntegerField(
        min_value=0, required=False, help_text="Only replies after this message id; optional."
    )


class StatusAccountInput(InputSerializer):
    user_id = StrictRegexField(USER_ID, help_text="The application account's id.")


class TicketStatusInput(InputSerializer):
    contract = ContractField(help_text="`v1`.")
    account = StatusAccountInput(help_text="The application account.")
    tickets = TicketCursorInput(
        many=True,
        required=False,
        max_length=services.STATUS_MAX_TICKETS,
        help_text="Up to 20 tickets with their reply cursors; optional.",
    )


class TargetInput(InputSerializer):
    chat_id = StrictIntegerField(min_value=1, required=False, help_text="A chat's id.")
    ticket = StrictIntegerField(min_value=1, required=False, help_text="A ticket's number.")
    widget_visitor = StrictRegexField(
        r"^[0-9a-f]{32}$", required=False, help_text="A widget visitor's 32-character contact guid: every chat of it."
    )
    telegram_user = StrictCharField(
        max_length=64,
        required=False,
        help_text="A messenger user; not supported yet (422 `target_not_supported_yet`).",
    )

    def validate(self, attrs):
        if len(attrs) != 1:
            raise serializers.ValidationError("Name exactly one of chat_id, ticket, widget_visitor.")
        return attrs


class LinkAccountInput(InputSerializer):
    app_user_id = StrictRegexField(USER_ID, help_text="The application account's id.")
    email = StrictEmailField(
        required=False, max_length=254, help_text="The account's confirmed e-mail address; optional."
    )


class GrantInput(InputSerializer):
    token = StrictCharField(min_length=1, max_length=512, help_text="The read grant's token.")
    expires_at = serializers.DateTimeField(
        help_text="When the grant lapses; clamped to at most 30 minutes, not refused."
    )


class AccountLinkInput(InputSerializer):
    contract = ContractField(help_text="`v1`.")
    request_id = StrictRegexField(REQUEST_ID, help_text="Your id of this request.")
    target = TargetInput(help_text="What to bind: `chat_id`, `ticket` or `widget_visitor`.")
    account = LinkAccountInput(help_text="The application account to bind.")
    method = serializers.ChoiceField(
        choices=list(services.IDENTITY_MAX),
        help_text=(
            "How the identity was proven: `email_code`, `agent_code`, `cabinet`, `telegram_link` or `app_ticket`."
        ),
    )
    identity_expires_at = serializers.DateTimeField(
        help_text="When the identity lapses; clamped per `method`, not refused."
    )
    grant = GrantInput(help_text="The assistant's read grant.")
    verification_ref = StrictCharField(
        max_length=128,
        required=False,
        help_text="Your reference of the verification, up to 128 characters; optional.",
    )


class RevokeInput(InputSerializer):
    contract = ContractField(help_text="`v1`.")
    request_id = StrictRegexField(REQUEST_ID, help_text="Your id of this request.")
    target = TargetInput(help_text="What to unbind: `chat_id`, `ticket` or `widget_visitor`.")
    reason = StrictCharField(max_length=200, help_text="Why, up to 200 characters.")


class TicketIntakeDoc(serializers.Serializer):
    number = serializers.IntegerField(help_text="The ticket's number.")
    state = serializers.CharField(help_text="open or closed")
    chat_id = serializers.IntegerField(help_text="The account's support chat.")
    created = serializers.BooleanField(help_text="True when this call filed a new ticket.")


class TicketReplyDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The reply's message id: the next `after_message_id`.")
    text = serializers.CharField(help_text="The reply's text.")
    created_at = serializers.DateTimeField(help_text="When the reply was stored.")


class TicketStatusItemDoc(serializers.Serializer):
    number = serializers.IntegerField(help_text="The ticket's number.")
    state = serializers.CharField(help_text="`open` or `closed`.")
    reason = serializers.CharField(allow_null=True, help_text="Why it was closed; null while open.")
    replies = TicketReplyDoc(many=True, help_text="Human support replies after the cursor, oldest first.")


class TicketStatusDoc(serializers.Serializer):
    tickets = TicketStatusItemDoc(many=True, help_text="The account's tickets asked for.")
    not_found = serializers.ListField(
        child=serializers.IntegerField(), help_text="Numbers that are not this account's tickets."
    )


class AccountLinkDoc(serializers.Serializer):
    bound = serializers.BooleanField(help_text="True when a chat is bound to the account; false when nothing was.")
    chat_ids = serializers.ListField(child=serializers.IntegerField(), required=False, help_text="The bound chats.")
    identity_expires_at = serializers.DateTimeField(
        required=False, help_text="When the identity lapses, after clamping."
    )
    grant_expires_at = serializers.DateTimeField(
        required=False, help_text="When the read grant lapses, after clamping."
    )
    revoked = serializers.IntegerField(required=False, help_text="On revoke: how many chats were unbound.")


class TicketIntakeView(SignedAssistantView):
    audit_name = "tickets"

    @extend_schema(
        summary="File a support ticket (signed)",
        description="Files a ticket for the application account: one room and one open ticket per account "
        "(a further intake appends to the open ticket, `created: false`); appears in the widget's ticket "
        "queue; idempotent on `request_id` for 24 h; 60 per minute per widget, 10 per hour per account. "
        "The service never contacts the customer; read replies with tickets/status." + signed.OPENAPI_ENVELOPE,
        request=TicketIntakeInput,
        responses={200: TicketIntakeDoc},
    )
    def post(self, request):
        data = self.validated(TicketIntakeInput)
        return Response(services.file_ticket(widget=request.widget, data=data))


class TicketStatusView(SignedAssistantView):
    audit_name = "tickets_status"

    @extend_schema(
        summary="Read ticket replies (signed)",
        description="Human support replies after each cursor for up to 20 tickets of the account; other "
        "accounts' numbers come back in `not_found`. Read-only." + signed.OPENAPI_ENVELOPE,
        request=TicketStatusInput,
        responses={200: TicketStatusDoc},
    )
    def post(self, request):
        data = self.validated(TicketStatusInput)
        result = services.ticket_status(
            widget=request.widget, user_id=data["account"]["user_id"], cursors=data.get("tickets")
        )
        return Response(result)


def _account_link_on(request) -> bool:
    return SupportConfig.objects.filter(widget=request.widget, account_link=True).exists()


class AccountLinkView(SignedAssistantView):
    audit_name = "account_link"
    problem_statuses = {"post": [*SIGNED_PROBLEMS, 404]}  # 404 while the widget is off the account-link list

    def available(self, request) -> bool:
        return _account_link_on(request)

    @extend_schema(
        summary="Link a chat to an application account (signed)",
        description="Only for widgets on the account-link list (404 while off). A chat bound to another "
        "account is 409 `chat_bound_to_other_account` and unchanged; the same account extends; identity and "
        "grant are clamped; `telegram_user` is 422 `target_not_supported_yet`; idempotent on `request_id`."
        + signed.OPENAPI_ENVELOPE,
        request=AccountLinkInput,
        responses={200: AccountLinkDoc},
    )
    def post(self, request):
        data = self.validated(AccountLinkInput)
        return Response(services.link_account(widget=request.widget, data=data))


class AccountRevokeView(SignedAssistantView):
    audit_name = "account_link_revoke"
    problem_statuses = {"post": [*SIGNED_PROBLEMS, 404]}  # 404 while the widget is off the account-link list

    def available(self, request) -> bool:
        return _account_link_on(request)

    @extend_schema(
        summary="Revoke an account link (signed)",
        description="Clears identity, read grant and confirmed mailbox (every chat of a widget_visitor); "
        "`{bound: false}` when nothing was bound; an app-ticket chat also hides the account until the next "
        "signed intake." + signed.OPENAPI_ENVELOPE,
        request=RevokeInput,
        responses={200: AccountLinkDoc},
    )
    def post(self, request):
        data = self.validated(RevokeInput)
        return Response(services.revoke_account(widget=request.widget, data=data))
