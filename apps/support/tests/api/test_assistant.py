"""The signed application-assistant endpoints of tickets and account links, through HTTP."""

from __future__ import annotations

import hashlib
import itertools
import json
import time
from datetime import timedelta

import pytest
import time_machine
from django.conf import settings
from django.utils import timezone
from rest_framework.test import APIClient

from apps.chats.models import Chat, Message
from apps.core import crypto, idempotency, ports, signed
from apps.core import services as core_services
from apps.erasure.models import PendingErasure
from apps.support import selectors, services
from apps.support.config import set_account_link
from apps.support.models import ChatAccount, SupportAction, Ticket
from tests.support.plugin import assert_problem

SECRET = "k" * 48
_nonces = itertools.count(1)


class Signed:
    def __init__(self, widget):
        self.widget = widget
        issued = core_services.issue_token(widget=widget, scopes=["ai:write"])
        self.token = issued.token
        self.client = APIClient()
        self.client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")

    def post(self, path, body, *, nonce=None, ts=None, secret=SECRET, client=None):
        raw = json.dumps(body).encode()
        ts = str(int(time.time()) if ts is None else ts)
        nonce = nonce or f"nonce-{next(_nonces):012d}"
        url = f"/api/v1/ai/assistant/{path}"
        return (client or self.client).post(
            url,
            raw,
            content_type="application/json",
            HTTP_X_SERVICE_TIMESTAMP=ts,
            HTTP_X_SERVICE_NONCE=nonce,
            HTTP_X_SERVICE_SIGNATURE=signed.sign(
                secret=secret, timestamp=ts, nonce=nonce, method="POST", path=url, body=raw
            ),
        )


@pytest.fixture
def app(widget, provide_port):
    s = Signed(widget)
    provide_port(
        ports.SIGNING_BINDING,
        lambda w: signed.SigningBinding(token_id=s.token.pk, secret=SECRET) if w.pk == widget.pk else None,
    )
    return s


def intake(n=1, user="user-1", **extra):
    return {
        "contract": "v1",
        "request_id": f"req-{n}",
        "source": "app",
        "category": "billing",
        "message": f"My payment failed ({n})",
        "account": {"user_id": user},
        **extra,
    }


def test_intake_files_a_ticket_in_the_accounts_app_room(app):
    response = app.post("tickets", intake(subject="Payment"))
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["created"] is True and body["state"] == "open" and body["number"] == 1
    chat = Chat.objects.get(pk=body["chat_id"])
    assert chat.channel == "app" and chat.messages.get().body == "My payment failed (1)"
    account = ChatAccount.objects.get(chat=chat)
    assert account.link == "verified" and account.link_source == "app_ticket" and account.app_user_id == "user-1"
    assert account.email is None


def test_a_second_intake_appends_to_the_open_ticket_one_room(app):
    first = app.post("tickets", intake(1)).json()
    second = app.post("tickets", intake(2)).json()
    assert second == {**first, "created": False}
    assert Chat.objects.filter(widget=app.widget, channel="app").count() == 1
    other = app.post("tickets", intake(3, user="user-2")).json()
    assert other["number"] == 2 and other["chat_id"] != first["chat_id"]


def test_intake_is_idempotent_on_request_id(app):
    first = app.post("tickets", intake(1)).json()
    again = app.post("tickets", intake(1)).json()
    assert again == first
    assert Message.objects.filter(chat_id=first["chat_id"]).count() == 1


NOTES = "/api/v1/_test/notes"


def digest_of(endpoint: str, request_id: str) -> str:
    """The 64 hex digits a signed call's `request_id` was once stored under: a valid header key."""
    return hashlib.sha256(f"{endpoint}\n{request_id}".encode()).hexdigest()


def note_with_key(api, key: str):
    return api().post(NOTES, {"title": "n"}, format="json", HTTP_X_SERVICE_IDEMPOTENCY_KEY=key)


def test_a_header_key_equal_to_a_request_ids_digest_leaves_the_signed_call_alone(app, api):
    assert note_with_key(api, digest_of("tickets", "req-1")).status_code == 201
    response = app.post("tickets", intake(1))
    assert response.status_code == 200, response.content
    assert response.json()["created"] is True
    assert app.post("tickets", intake(1)).json() == response.json()


def test_a_signed_calls_key_leaves_a_header_key_of_its_digest_alone(app, api):
    assert app.post("tickets", intake(1)).status_code == 200
    response = note_with_key(api, digest_of("tickets", "req-1"))
    assert response.status_code == 201, response.content


def test_no_header_key_can_be_a_signed_calls_key(app, api):
    key = idempotency.derived_key("tickets", "req-1")
    assert key.startswith(idempotency.DERIVED_PREFIX)
    assert_problem(note_with_key(api, key), 400, "invalid_idempotency_key")
    assert app.post("tickets", intake(1)).status_code == 200
    assert_problem(note_with_key(api, key), 400, "invalid_idempotency_key")


def test_intake_is_limited_to_10_per_hour_per_account(app):
    for n in range(10):
        assert app.post("tickets", intake(n)).status_code == 200
    refused = app.post("tickets", intake(99))
    assert_problem(refused, 429, "rate_limited")
    assert "Retry-After" in refused
    assert app.post("tickets", intake(100, user="user-2")).status_code == 200


@pytest.mark.parametrize(
    "change",
    [
        {"contract": "v2"},
        {"source": "email"},
        {"category": "fun"},
        {"message": ""},
        {"message": "x" * 4001},
        {"account": {}},
        {"account": {"user_id": "u", "extra": 1}},
        {"surprise": 1},
        {"in_reply_to": "7"},
        {"context": {"note": "a\x00b"}},
        {"context": {"k\x00": 1}},
        {"context": {"note": "\ud800"}},
    ],
)
def test_bad_intake_is_422_and_files_nothing(app, change):
    assert_problem(app.post("tickets", {**intake(), **change}), 422)
    assert not Ticket.objects.exists()


def test_the_ticket_shows_in_the_support_queue(app, support):
    app.post("tickets", intake())
    support.configure(channels=["widget", "tg", "app"])
    queue = support.client.get("/api/v1/support/tickets").json()["data"]
    assert [t["number"] for t in queue] == [1]
    assert queue[0]["account"]["link"] == "verified" and queue[0]["account"]["email"] is None


def test_status_returns_human_support_replies_after_the_cursor(app, support):
    support.configure(channels=["widget", "tg", "app"])
    body = app.post("tickets", intake()).json()
    chat = Chat.objects.get(pk=body["chat_id"])
    first = support.reply(chat, "Looking into it", ticket=1, close_ticket=False).json()
    support.reply(chat, "Fixed, refunded", ticket=1)
    status = app.post("tickets/status", {"contract": "v1", "account": {"user_id": "user-1"}}).json()
    assert status["not_found"] == []
    [ticket] = status["tickets"]
    assert ticket["state"] == "closed" and ticket["reason"] == "answered"
    assert [r["text"] for r in ticket["replies"]] == ["Looking into it", "Fixed, refunded"]
    after = app.post(
        "tickets/status",
        {
            "contract": "v1",
            "account": {"user_id": "user-1"},
            "tickets": [{"number": 1, "after_message_id": first["message_id"]}],
        },
    ).json()
    assert [r["text"] for r in after["tickets"][0]["replies"]] == ["Fixed, refunded"]


def test_status_puts_other_accounts_numbers_in_not_found(app):
    app.post("tickets", intake(1, user="user-1"))
    app.post("tickets", intake(2, user="user-2"))
    status = app.post(
        "tickets/status",
        {"contract": "v1", "account": {"user_id": "user-1"}, "tickets": [{"number": 1}, {"number": 2}, {"number": 99}]},
    ).json()
    assert [t["number"] for t in status["tickets"]] == [1]
    assert status["not_found"] == [2, 99]


@pytest.mark.parametrize("number", [2**31, 2**63, 2**70])
def test_status_puts_a_number_past_any_ticket_in_not_found(app, number):
    app.post("tickets", intake(1, user="user-1"))
    response = app.post(
        "tickets/status",
        {"contract": "v1", "account": {"user_id": "user-1"}, "tickets": [{"number": 1}, {"number": number}]},
    )
    assert response.status_code == 200, response.content
    assert [t["number"] for t in response.json()["tickets"]] == [1]
    assert response.json()["not_found"] == [number]


def test_status_after_a_message_id_past_any_message_has_no_replies(app):
    app.post("tickets", intake(1, user="user-1"))
    body = {"contract": "v1", "account": {"user_id": "user-1"}, "tickets": [{"number": 1, "after_message_id": 2**70}]}
    response = app.post("tickets/status", body)
    assert response.status_code == 200, response.content
    assert response.json()["tickets"][0]["replies"] == []


def test_status_takes_at_most_20_tickets(app):
    body = {"contract": "v1", "account": {"user_id": "u"}, "tickets": [{"number": n} for n in range(1, 22)]}
    assert_problem(app.post("tickets/status", body), 422)


# --- the envelope through HTTP -------------------------------------------------------------------------


def test_a_wrong_signature_is_401_and_its_nonce_stays_usable(app):
    response = app.post("tickets", intake(), nonce="reusable-nonce-0001", secret="x" * 48)
    assert_problem(response, 401, "invalid_signature")
    assert app.post("tickets", intake(), nonce="reusable-nonce-0001").status_code == 200
    assert_problem(app.post("tickets", intake(2), nonce="reusable-nonce-0001"), 409, "nonce_reused")


def _replay(app, captured_path: str, target_path: str, body: dict, *, legacy: bool = False, nonce: str):
    """A request signed for `captured_path`, sent as captured to `target_path`."""
    raw = json.dumps(body).encode()
    ts = str(int(time.time()))
    if legacy:
        signature = signed.sign_legacy(secret=SECRET, timestamp=ts, nonce=nonce, body=raw)
    else:
        signature = signed.sign(secret=SECRET, timestamp=ts, nonce=nonce, method="POST", path=captured_path, body=raw)
    return app.client.post(
        target_path,
        raw,
        content_type="application/json",
        HTTP_X_SERVICE_TIMESTAMP=ts,
        HTTP_X_SERVICE_NONCE=nonce,
        HTTP_X_SERVICE_SIGNATURE=signature,
    )


def test_a_request_signed_for_one_path_is_refused_on_another_and_keeps_its_nonce(app, support):
    set_account_link(widget=app.widget, enabled=True)
    chat = _visitor_chat(support)
    body = {"contract": "v1", "request_id": "r-1", "target": {"chat_id": chat.pk}, "reason": "x"}
    status_path, revoke_path = "/api/v1/ai/assistant/tickets/status", "/api/v1/ai/assistant/account-link/revoke"
    response = _replay(app, status_path, revoke_path, body, nonce="captured-nonce-0001")
    assert_problem(response, 401, "invalid_signature")
    assert "sha256=v2" in response.json()["detail"]
    assert not signed.SignedNonce.objects.filter(nonce="captured-nonce-0001").exists()
    assert _replay(app, revoke_path, revoke_path, body, nonce="captured-nonce-0001").status_code == 200


def test_the_legacy_signature_is_accepted_only_before_the_deprecation_date(app, settings):
    settings.SIGNED_V1_ACCEPTED_UNTIL = "2999-01-01"
    path = "/api/v1/ai/assistant/tickets"
    assert _replay(app, path, path, intake(), legacy=True, nonce="legacy-nonce-00001").status_code == 200
    settings.SIGNED_V1_ACCEPTED_UNTIL = (timezone.now().date()).isoformat()  # today: the window is over
    refused = _replay(app, path, path, intake(2, user="user-2"), legacy=True, nonce="legacy-nonce-00002")
    assert_problem(refused, 401, "invalid_signature")
    settings.SIGNED_V1_ACCEPTED_UNTIL = ""
    assert_problem(_replay(app, path, path, intake(3, user="user-3"), legacy=True, nonce="legacy-nonce-00003"), 401)
    assert Ticket.objects.count() == 1


def test_the_legacy_window_ends_on_the_documented_date():
    assert settings.SIGNED_V1_ACCEPTED_UNTIL == "2027-06-01"
    assert "SIGNED_V1_ACCEPTED_UNTIL" in signed.OPENAPI_ENVELOPE and "2027-06-01" in signed.OPENAPI_ENVELOPE


def test_a_stale_request_is_401(app):
    assert_problem(app.post("tickets", intake(), ts=int(time.time()) - 301), 401, "stale_timestamp")
    # ahead by more than the window with room to spare: the server reads its clock later than this
    # line (a loaded machine took 0.5 s), which brings a timestamp 301 s ahead inside the window
    assert_problem(app.post("tickets", intake(), ts=int(time.time()) + 330), 401, "stale_timestamp")
    assert not Ticket.objects.exists()


def test_another_token_is_403_token_not_bound(app, widget):
    other = Signed(widget)
    assert_problem(app.post("tickets", intake(), client=other.client), 403, "token_not_bound")


def test_an_unbound_widget_is_403(widget, provide_port):
    provide_port(ports.SIGNING_BINDING, None)
    s = Signed(widget)
    assert_problem(s.post("tickets", intake()), 403, "token_not_bound")


def test_without_ai_write_is_403_missing_scope(app, widget):
    issued = core_services.issue_token(widget=widget, scopes=["ai:read"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
    assert_problem(app.post("tickets", intake(), client=client), 403, "missing_scope")


# --- account link ---------------------------------------------------------------------------------------


def _visitor_chat(support, **kw):
    return support.chat(**kw)


def link_body(chat, n=1, user="user-1", **extra):
    now = timezone.now()
    return {
        "contract": "v1",
        "request_id": f"link-{n}",
        "target": {"chat_id": chat.pk},
        "account": {"app_user_id": user, "email": "c@shop.ru"},
        "method": "email_code",
        "identity_expires_at": (now + timedelta(hours=2)).isoformat(),
        "grant": {"token": "grant-token", "expires_at": (now + timedelta(minutes=10)).isoformat()},
        **extra,
    }


def test_account_link_is_404_while_the_widget_is_off(app, support):
    chat = _visitor_chat(support)
    assert_problem(app.post("account-link", link_body(chat)), 404, "not_found")
    assert_problem(
        app.post(
            "account-link/revoke", {"contract": "v1", "request_id": "r", "target": {"chat_id": chat.pk}, "reason": "x"}
        ),
        404,
    )


def test_account_link_binds_and_shows_in_chat_account(app, support):
    set_account_link(widget=app.widget, enabled=True)
    chat = _visitor_chat(support)
    body = app.post("account-link", link_body(chat)).json()
    assert body["bound"] is True and body["chat_ids"] == [chat.pk]
    account = support.client.get(f"/api/v1/support/chats/{chat.pk}").json()["account"]
    assert account["link"] == "verified" and account["app_user_id"] == "user-1" and account["email"] == "c@shop.ru"
    assert account["link_source"] == "email_code" and account["regrant_needed"] is False


def test_account_link_of_a_chat_whose_contact_is_under_erasure_is_404_and_binds_nothing(app, support):
    set_account_link(widget=app.widget, enabled=True)
    chat = _visitor_chat(support)
    PendingErasure.objects.create(widget=app.widget, contact_id=chat.contact_id)
    for target in ({"chat_id": chat.pk}, {"widget_visitor": chat.contact.guid}):
        assert_problem(app.post("account-link", {**link_body(chat), "target": target}), 404, "not_found")
    assert not ChatAccount.objects.filter(chat=chat).exists()


def test_identity_and_grant_are_clamped(app, support):
    set_account_link(widget=app.widget, enabled=True)
    chat = _visitor_chat(support)
    now = timezone.now()
    body = link_body(
        chat,
        method="cabinet",
        identity_expires_at=(now + timedelta(days=30)).isoformat(),
        grant={"token": "t", "expires_at": (now + timedelta(days=1)).isoformat()},
    )
    answer = app.post("account-link", body).json()
    from datetime import datetime

    identity = datetime.fromisoformat(answer["identity_expires_at"])
    grant = datetime.fromisoformat(answer["grant_expires_at"])
    assert identity - now <= timedelta(hours=12, seconds=5)
    assert grant - now <= timedelta(minutes=30, seconds=5)


def test_a_chat_bound_to_another_account_is_409_and_unchanged(app, support):
    set_account_link(widget=app.widget, enabled=True)
    chat = _visitor_chat(support)
    app.post("account-link", link_body(chat, 1, user="user-1"))
    refused = app.post("account-link", link_body(chat, 2, user="user-2"))
    assert_problem(refused, 409, "chat_bound_to_other_account")
    assert ChatAccount.objects.get(chat=chat).app_user_id == "user-1"
    again = app.post("account-link", link_body(chat, 3, user="user-1"))
    assert again.status_code == 200


def test_account_link_is_idempotent_on_request_id(app, support):
    set_account_link(widget=app.widget, enabled=True)
    chat = _visitor_chat(support)
    first = app.post("account-link", link_body(chat, 1)).json()
    assert app.post("account-link", link_body(chat, 1)).json() == first


def test_telegram_user_target_is_422_not_supported_yet(app, support):
    set_account_link(widget=app.widget, enabled=True)
    chat = _visitor_chat(support)
    body = link_body(chat, target={"telegram_user": "12345"})
    assert_problem(app.post("account-link", body), 422, "target_not_supported_yet")


def test_a_foreign_target_is_404(app, support, other_widget):
    set_account_link(widget=app.widget, enabled=True)
    from apps.chats import services as chat_services

    contact = chat_services.create_contact(widget=other_widget)
    foreign = chat_services.post_client_message(
        widget=other_widget, contact=contact, data=chat_services.MessageInput(body="x")
    ).chat
    assert_problem(app.post("account-link", link_body(foreign)), 404)


def test_revoke_clears_every_chat_of_a_visitor(app, support):
    set_account_link(widget=app.widget, enabled=True)
    chat = _visitor_chat(support)
    tg = support.chat(channel="tg", contact=chat.contact)
    app.post("account-link", link_body(chat, 1, target={"widget_visitor": chat.contact.guid}))
    answer = app.post(
        "account-link/revoke",
        {"contract": "v1", "request_id": "rv-1", "target": {"widget_visitor": chat.contact.guid}, "reason": "logout"},
    ).json()
    assert answer == {"bound": False, "revoked": 2}
    for c in (chat, tg):
        account = support.client.get(f"/api/v1/support/chats/{c.pk}").json()["account"]
        assert account["link"] == "anonymous" and account["email"] is None and account["app_user_id"] is None
    nothing = app.post(
        "account-link/revoke",
        {"contract": "v1", "request_id": "rv-2", "target": {"chat_id": chat.pk}, "reason": "again"},
    ).json()
    assert nothing == {"bound": False, "revoked": 0}


def test_revoking_an_app_ticket_chat_hides_it_until_the_next_intake(app, support):
    set_account_link(widget=app.widget, enabled=True)
    body = app.post("tickets", intake(1)).json()
    app.post(
        "account-link/revoke",
        {"contract": "v1", "request_id": "rv", "target": {"ticket": body["number"]}, "reason": "x"},
    )
    account = support.client.get(f"/api/v1/support/chats/{body['chat_id']}").json()["account"]
    assert account["link"] == "none" and account["app_user_id"] is None
    app.post("tickets", intake(2))
    account = support.client.get(f"/api/v1/support/chats/{body['chat_id']}").json()["account"]
    assert account["link"] == "verified" and account["app_user_id"] == "user-1"


# --- the grant and the verification reference are stored, never returned ------------------------------


def test_the_grant_is_stored_encrypted_and_never_returned(app, support):
    set_account_link(widget=app.widget, enabled=True)
    chat = _visitor_chat(support)
    answer = app.post("account-link", link_body(chat, verification_ref="ver-77"))
    assert "grant-token" not in answer.content.decode()
    account = ChatAccount.objects.get(chat=chat)
    assert account.verification_ref == "ver-77"
    assert account.grant_token_encrypted and "grant-token" not in account.grant_token_encrypted
    assert selectors.get_read_grant(widget=app.widget, chat=chat) == "grant-token"
    detail = support.client.get(f"/api/v1/support/chats/{chat.pk}").content.decode()
    assert "grant-token" not in detail and "ver-77" not in detail and account.grant_token_encrypted not in detail


def test_the_read_grant_lapses_at_its_clamped_expiry(app, support):
    set_account_link(widget=app.widget, enabled=True)
    chat = _visitor_chat(support)
    now = timezone.now()
    body = link_body(chat, grant={"token": "g", "expires_at": (now + timedelta(days=1)).isoformat()})
    app.post("account-link", body)
    assert selectors.get_read_grant(widget=app.widget, chat=chat, now=now + timedelta(minutes=29)) == "g"
    assert selectors.get_read_grant(widget=app.widget, chat=chat, now=now + timedelta(minutes=31)) is None
    with time_machine.travel(now + timedelta(minutes=31)):
        account = support.client.get(f"/api/v1/support/chats/{chat.pk}").json()["account"]
    assert account["link"] == "verified" and account["regrant_needed"] is True


def test_a_new_link_of_the_same_account_replaces_the_grant(app, support):
    set_account_link(widget=app.widget, enabled=True)
    chat = _visitor_chat(support)
    app.post("account-link", link_body(chat, 1, verification_ref="first"))
    app.post("account-link", link_body(chat, 2, grant={"token": "fresh", "expires_at": timezone.now().isoformat()}))
    account = ChatAccount.objects.get(chat=chat)
    assert account.verification_ref is None
    assert crypto.decrypt_secret(account.grant_token_encrypted) == "fresh"


def test_revoke_clears_the_read_grant_and_the_verification_ref(app, support):
    set_account_link(widget=app.widget, enabled=True)
    chat = _visitor_chat(support)
    app.post("account-link", link_body(chat, verification_ref="ver-1"))
    app.post(
        "account-link/revoke", {"contract": "v1", "request_id": "rv", "target": {"chat_id": chat.pk}, "reason": "x"}
    )
    account = ChatAccount.objects.get(chat=chat)
    assert account.grant_token_encrypted == "" and account.grant_expires_at is None and account.verification_ref is None
    assert selectors.get_read_grant(widget=app.widget, chat=chat) is None


def test_revoking_an_app_ticket_chat_clears_its_grant(app, support):
    set_account_link(widget=app.widget, enabled=True)
    body = app.post("tickets", intake(1)).json()
    chat = Chat.objects.get(pk=body["chat_id"])
    app.post("account-link", link_body(chat, 1, method="app_ticket"))
    assert selectors.get_read_grant(widget=app.widget, chat=chat) == "grant-token"
    app.post("account-link/revoke", {"contract": "v1", "request_id": "rv", "target": {"ticket": 1}, "reason": "x"})
    account = ChatAccount.objects.get(chat=chat)
    assert account.grant_token_encrypted == "" and selectors.get_read_grant(widget=app.widget, chat=chat) is None


# --- audit of the signed calls ----------------------------------------------------------------------------


def _rows(widget, kind):
    return list(SupportAction.objects.filter(widget=widget, kind=kind).order_by("pk"))


def test_an_intake_is_audited_with_text_hash_and_length_only(app):
    body = app.post("tickets", intake(1)).json()
    [row] = _rows(app.widget, "assistant.tickets")
    assert row.outcome == "ok" and row.status_code == 200 and row.token_id == app.token.pk
    assert row.ticket_number == body["number"] and row.chat_id == body["chat_id"]
    assert row.idempotency_key == "req-1" and row.method == "POST" and row.path == "/api/v1/ai/assistant/tickets"
    assert (row.text_sha256, row.text_length) == services.text_digest("My payment failed (1)")
    assert "My payment" not in str(SupportAction.objects.filter(pk=row.pk).values().get())


@pytest.mark.parametrize(
    ("call", "status", "code"),
    [
        (lambda a: a.post("tickets", intake(), secret="x" * 48), 401, "invalid_signature"),
        (lambda a: a.post("tickets", intake(), ts=int(time.time()) - 301), 401, "stale_timestamp"),
        (lambda a: a.post("tickets", {**intake(), "surprise": 1}), 422, "validation_failed"),
        (lambda a: a.post("tickets/status", {"contract": "v2", "account": {"user_id": "u"}}), 422, "validation_failed"),
        (lambda a: a.post("account-link", {"contract": "v1"}), 404, "not_found"),
        (lambda a: a.post("account-link/revoke", {"contract": "v1"}), 404, "not_found"),
    ],
)
def test_every_refused_signed_call_leaves_a_row(app, call, status, code):
    response = call(app)
    assert_problem(response, status, code)
    [row] = SupportAction.objects.filter(widget=app.widget)
    assert row.outcome == "refused" and row.status_code == status and row.reason == code
    assert row.kind.startswith("assistant.") and row.token_id == app.token.pk


def test_a_reused_nonce_and_a_rate_limit_are_audited_as_refused(app):
    app.post("tickets", intake(1), nonce="same-nonce-000001")
    assert_problem(app.post("tickets", intake(2), nonce="same-nonce-000001"), 409, "nonce_reused")
    for n in range(2, 11):
        app.post("tickets", intake(n))
    assert_problem(app.post("tickets", intake(99)), 429, "rate_limited")
    reasons = [r.reason for r in _rows(app.widget, "assistant.tickets") if r.outcome == "refused"]
    assert reasons == ["nonce_reused", "rate_limited"]


def test_an_unbound_token_is_audited(app, widget):
    other = Signed(widget)
    assert_problem(app.post("tickets", intake(), client=other.client), 403, "token_not_bound")
    [row] = SupportAction.objects.filter(widget=widget)
    assert row.token_id == other.token.pk and row.reason == "token_not_bound" and row.outcome == "refused"


def test_account_link_and_revoke_calls_are_audited_with_their_target(app, support):
    set_account_link(widget=app.widget, enabled=True)
    chat = _visitor_chat(support)
    app.post("account-link", link_body(chat, 1, user="user-1"))
    assert_problem(app.post("account-link", link_body(chat, 2, user="user-2")), 409, "chat_bound_to_other_account")
    assert_problem(app.post("account-link", link_body(chat, 3, target={"telegram_user": "1"})), 422)
    app.post(
        "account-link/revoke", {"contract": "v1", "request_id": "rv", "target": {"chat_id": chat.pk}, "reason": "x"}
    )
    links = _rows(app.widget, "assistant.account_link")
    assert [(r.outcome, r.reason, r.chat_id) for r in links] == [
        ("ok", "", chat.pk),
        ("refused", "chat_bound_to_other_account", chat.pk),
        ("refused", "target_not_supported_yet", None),
    ]
    [revoke] = _rows(app.widget, "assistant.account_link_revoke")
    assert revoke.outcome == "ok" and revoke.chat_id == chat.pk and revoke.idempotency_key == "rv"
    every = SupportAction.objects.filter(widget=app.widget).values_list("text_sha256", "idempotency_key")
    assert all("grant-token" not in "".join(v) for v in every)


def test_a_status_read_is_audited(app):
    app.post("tickets/status", {"contract": "v1", "account": {"user_id": "u"}})
    [row] = _rows(app.widget, "assistant.tickets_status")
    assert row.outcome == "ok" and row.status_code == 200


def test_signed_audit_rows_are_purged_after_180_days(app):
    app.post("tickets", intake(1))
    row = SupportAction.objects.get(widget=app.widget)
    assert services.purge_audit(now=row.created_at + timedelta(days=179)) == 0
    assert services.purge_audit(now=row.created_at + timedelta(days=181)) == 1


# --- limits and retention of the signed intake --------------------------------------------------------------


def test_intake_is_limited_to_60_per_minute_per_widget(app):
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        for n in range(60):
            assert app.post("tickets", intake(n, user=f"user-{n // 10}")).status_code == 200, n
        refused = app.post("tickets", intake(60, user="user-other"))
        assert_problem(refused, 429, "rate_limited")
        assert "Retry-After" in refused
    if settings.REDIS_URL:
        return  # Redis budgets read the Redis server's clock, which a test cannot move
    with time_machine.travel(start + timedelta(seconds=61), tick=False):
        assert app.post("tickets", intake(61, user="user-other")).status_code == 200


def test_a_request_id_is_remembered_for_24_hours_then_purged(app):
    first = app.post("tickets", intake(1)).json()
    with time_machine.travel(timezone.now() + timedelta(hours=23)):
        assert app.post("tickets", intake(1)).json() == first
        assert idempotency.purge_expired() == 0
    with time_machine.travel(timezone.now() + timedelta(hours=24, minutes=1)):
        assert idempotency.purge_expired() == 1
        again = app.post("tickets", intake(1))
    assert again.status_code == 200 and again.json()["created"] is False  # a new intake, appended
    assert Message.objects.filter(chat_id=first["chat_id"]).count() == 2


@pytest.mark.parametrize(
    ("method", "lifetime"),
    [
        ("email_code", timedelta(hours=24)),
        ("agent_code", timedelta(hours=24)),
        ("cabinet", timedelta(hours=12)),
        ("telegram_link", timedelta(days=7)),
        ("app_ticket", timedelta(days=37)),
    ],
)
def test_each_methods_identity_is_clamped_not_refused(app, support, method, lifetime):
    set_account_link(widget=app.widget, enabled=True)
    chat = _visitor_chat(support)
    now = timezone.now()
    body = link_body(chat, method=method, identity_expires_at=(now + timedelta(days=400)).isoformat())
    answer = app.post("account-link", body)
    assert answer.status_code == 200
    stored = ChatAccount.objects.get(chat=chat).identity_expires_at
    assert lifetime - timedelta(seconds=5) <= stored - now <= lifetime + timedelta(seconds=5)
    shorter = link_body(chat, 2, method=method, identity_expires_at=(now + timedelta(hours=1)).isoformat())
    app.post("account-link", shorter)
    assert ChatAccount.objects.get(chat=chat).identity_expires_at - now <= timedelta(hours=1, seconds=5)


def test_status_of_a_ticket_whose_contact_is_under_erasure_is_not_found(app, support):
    support.configure(channels=["widget", "tg", "app"])
    body = app.post("tickets", intake()).json()
    chat = Chat.objects.get(pk=body["chat_id"])
    support.reply(chat, "Looking into it", ticket=1, close_ticket=False)
    PendingErasure.objects.create(widget=app.widget, contact_id=chat.contact_id)
    status = app.post(
        "tickets/status", {"contract": "v1", "account": {"user_id": "user-1"}, "tickets": [{"number": 1}]}
    ).json()
    assert status == {"tickets": [], "not_found": [1]}
    assert app.post("tickets/status", {"contract": "v1", "account": {"user_id": "user-1"}}).json() == {
        "tickets": [],
        "not_found": [],
    }
