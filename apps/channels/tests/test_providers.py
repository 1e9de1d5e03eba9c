"""Every messenger provider of the generic path (`wa`, `vb`, `fb`, `ok`, `mx`, `cian`, `ali`, `apple`)
against a loopback fake of its wire format: PUT (local write, then the provider's registration or
`attempted: false`), a failed registration kept and retried through verify, DELETE (Cian's real
unsubscribe, the others' none, never blocking), strict bodies, the inbound hook with a good and a
forged signature (or secret), a redelivered update, and an operator keyboard message as that
provider receives it (the text and one `label: url` line per button), with retries."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.billing.models import AccountPlan, Plan
from apps.channels.models import InboundUpdate, MessengerConnection
from apps.channels.providers import apple as apple_provider
from apps.channels.providers.base import hmac_hex
from apps.channels.tests.provider_fakes import ProviderFake
from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.core import crypto
from apps.core.logging import scrub
from apps.webhooks import services as engine
from apps.webhooks.models import Delivery
from tests.support.factories import AgentFactory
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

TOKEN = "provider-token-0123456789abcdef"
BAD = "forged-token-0123456789abcdef"
SID = "106540352242922"
APP_SECRET = "meta-app-secret-0123456789"
KEYBOARD_TEXT = "Pick\nTrack: https://example.com/t\nHelp: https://example.com/h"


@dataclass(frozen=True)
class Case:
    code: str
    registration: str  # the webhook status of a good PUT
    attempted: bool
    user: str  # the provider's id of the user in the inbound events below
    address: str  # where replies go


CASES = {
    "vb": Case("vb", "registered", True, "01234567890A=", "01234567890A="),
    "fb": Case("fb", "not_supported", False, "6743108291", "6743108291"),
    "wa": Case("wa", "not_supported", False, "79161234567", "79161234567"),
    "ok": Case("ok", "registered", True, "user:5862124", "chat:C3ED1F8A"),
    "mx": Case("mx", "registered", True, "5081", "900211"),
    "cian": Case("cian", "registered", True, "88123", "chat-88123"),
    "ali": Case("ali", "unconfirmed_provider_api", True, "buyer-77", "conv-77"),
    "apple": Case("apple", "not_supported", False, "urn:mbid:AQAAY1", "urn:mbid:AQAAY1"),
}
CODES = list(CASES)


@pytest.fixture
def paid(widget):
    plan = Plan.objects.create(slug="test-pro", name="Test Pro", is_paid=True, paid_features=["messengers"])
    AccountPlan.objects.create(account=widget.account, plan=plan)
    return plan


@pytest.fixture(params=CODES)
def fake(request, settings, monkeypatch):
    code = request.param
    f = ProviderFake(code, valid_tokens={TOKEN}).start()
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    settings.PUBLIC_BASE_URL = "https://chat.example.com"
    settings.PROVIDER_APP_SECRET_FB = settings.PROVIDER_APP_SECRET_WA = APP_SECRET
    if code != "apple":
        setattr(settings, f"PROVIDER_API_BASE_{code.upper()}", f.base)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(f.ca_path))
    yield f
    f.stop()


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": str(uuid.uuid4())}


def body_for(fake: ProviderFake, token: str = TOKEN) -> dict:
    if fake.code == "wa":
        return {"token": token, "sid": SID}
    if fake.code == "apple":
        return {"token": token, "sid": SID, "url": fake.base + "/v1/message"}
    return {"token": token}


def put(api, fake, body=None):
    url = f"/api/v1/messengers/{fake.code}"
    body = body_for(fake) if body is None else body
    return api(scopes=["messengers:write"]).put(url, body, format="json", **idem())


def connect(api, fake) -> MessengerConnection:
    response = put(api, fake)
    assert response.status_code == 200, response.content
    return MessengerConnection.objects.get(provider=fake.code)


# --- inbound events in each provider's wire format ------------------------------------------------


def event(code: str, update_id: str, text: str = "Hello") -> dict:
    case = CASES[code]
    now = int(time.time())
    if code == "vb":
        return {
            "event": "message",
            "timestamp": now * 1000,
            "chat_hostname": "SN-CHAT-01_",
            "message_token": int(update_id),
            "sender": {"id": case.user, "name": "Ivan Petrov", "language": "ru", "country": "RU", "api_version": 10},
            "message": {"type": "text", "text": text},
            "silent": False,
        }
    if code == "fb":
        return {
            "object": "page",
            "entry": [
                {
                    "id": "1029384756",
                    "time": now * 1000,
                    "messaging": [
                        {
                            "sender": {"id": case.user},
                            "recipient": {"id": "1029384756"},
                            "timestamp": now * 1000,
                            "message": {"mid": f"m_{update_id}" + "x" * 80, "text": text},
                        }
                    ],
                }
            ],
        }
    if code == "wa":
        return {
            "object": "whatsapp_business_account",
            "entry": [
                {
                    "id": "102290129340398",
                    "changes": [
                        {
                            "field": "messages",
                            "value": {
                                "messaging_product": "whatsapp",
                                "metadata": {"display_phone_number": "15550783881", "phone_number_id": SID},
                                "contacts": [{"profile": {"name": "Ivan Petrov"}, "wa_id": case.user}],
                                "messages": [
                                    {
                                        "from": case.user,
                                        "id": f"wamid.{update_id}",
                                        "timestamp": str(now),
                                        "type": "text",
                                        "text": {"body": text},
                                    }
                                ],
                            },
                        }
                    ],
                }
            ],
        }
    if code == "ok":
        return {
            "webhookType": "MESSAGE_CREATED",
            "sender": {"user_id": case.user, "name": "Ivan Petrov"},
            "recipient": {"chat_id": case.address},
            "message": {"text": text, "mid": f"mid.{update_id}"},
            "timestamp": now * 1000,
        }
    if code == "mx":
        return {
            "update_type": "message_created",
            "timestamp": now * 1000,
            "message": {
                "sender": {"user_id": int(case.user), "name": "Ivan Petrov", "is_bot": False},
                "recipient": {"chat_id": int(case.address), "chat_type": "dialog"},
                "timestamp": now * 1000,
                "body": {"mid": f"mid.{update_id}", "seq": int(update_id), "text": text},
            },
        }
    if code == "cian":
        return {
            "eventId": f"evt-{update_id}",
            "eventType": "message",
            "data": {
                "chatId": case.address,
                "message": {
                    "messageId": update_id,
                    "text": text,
                    "author": {"userId": case.user, "name": "Ivan Petrov"},
                },
            },
        }
    if code == "ali":
        return {
            "event_id": update_id,
            "event_type": "message",
            "conversation_id": case.address,
            "sender": {"buyer_id": case.user, "name": "Ivan Petrov"},
            "content": {"type": "text", "text": text},
        }
    return {"v": 1, "type": "text", "id": f"msg-{update_id}", "sourceId": case.user, "destinationId": SID, "body": text}


def deliver(client, conn: MessengerConnection, payload: dict, *, forged: bool = False):
    """The hook call as the provider makes it: signed (or carrying our secret) unless forged."""
    raw = json.dumps(payload).encode()
    secret = crypto.decrypt_secret(conn.hook_secret_encrypted)
    code, headers, query = conn.provider, {}, ""
    if code == "vb":
        headers["HTTP_X_VIBER_CONTENT_SIGNATURE"] = hmac_hex(BAD if forged else TOKEN, raw)
    elif code in ("fb", "wa"):
        headers["HTTP_X_HUB_SIGNATURE_256"] = "sha256=" + hmac_hex("not-the-app-secret" if forged else APP_SECRET, raw)
    elif code == "mx":
        headers["HTTP_X_MAX_BOT_API_SECRET"] = "forged" if forged else secret
    elif code == "apple":
        jwt = apple_provider.sign_jwt(BAD if forged else TOKEN, {"aud": SID, "exp": int(time.time()) + 60})
        headers |= {"HTTP_AUTHORIZATION": f"Bearer {jwt}", "HTTP_DESTINATION_ID": SID, "HTTP_SOURCE_ID": "x"}
    else:
        query = "?token=" + ("forged" if forged else secret)
    return client.post(
        f"/api/hooks/{code}/{conn.hook_id}/{query}", data=raw, content_type="application/json", **headers
    )


# --- PUT, verify, DELETE --------------------------------------------------------------------------


def test_put_writes_then_registers(api, widget, fake, paid):
    case = CASES[fake.code]
    response = put(api, fake)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["webhook"] == {"attempted": case.attempted, "status": case.registration}
    assert body["connected"] is True and body["has_token"] is True
    assert TOKEN not in response.content.decode() and "hooks" not in response.content.decode()
    if fake.code in ("wa", "apple"):
        assert body["has_sid"] is True
    conn = MessengerConnection.objects.get(widget=widget, provider=fake.code)
    assert TOKEN not in conn.token_encrypted and crypto.decrypt_secret(conn.token_encrypted) == TOKEN
    assert conn.inbound_live is True  # no registration failed, whether or not one was attempted
    if fake.code == "fb":  # no webhook mechanism; the page id of the token is read for the hook
        assert [(c.method, c.path) for c in fake.calls] == [("GET", "/v19.0/me")]
        assert crypto.decrypt_secret(conn.sid_encrypted) == fake.page_id
        return
    if not case.attempted:
        assert fake.calls == []  # no webhook mechanism: nothing is called
        return
    (registration,) = fake.calls
    url = registration.body["url"]
    assert url.startswith(f"https://chat.example.com/api/hooks/{fake.code}/{conn.hook_id}/")
    secret = crypto.decrypt_secret(conn.hook_secret_encrypted)
    if fake.code in ("ok", "cian", "ali"):  # providers that sign nothing get our secret in the URL
        assert dict(parse_qsl(urlsplit(url).query)) == {"token": secret}
        assert secret not in scrub(f"GET {url}")  # never in a log line
    if fake.code == "mx":
        assert registration.body["secret"] == secret and registration.body["update_types"] == ["message_created"]
        assert registration.headers["authorization"] == TOKEN
    if fake.code == "vb":
        assert registration.path == "/pa/set_webhook" and registration.headers["x-viber-auth-token"] == TOKEN
        assert "message" in registration.body["event_types"]


def test_a_failed_registration_keeps_the_credential_and_verify_retries(api, fake, paid):
    case = CASES[fake.code]
    if not case.attempted:
        pytest.skip("no webhook mechanism: nothing to fail")
    fake.fail_register = True
    body = put(api, fake).json()
    assert body["webhook"]["attempted"] is True and body["webhook"]["status"] == "failed"
    assert "reachable" in body["webhook"]["detail"] or "invalidUrl" in body["webhook"]["detail"]
    conn = MessengerConnection.objects.get()
    assert conn.inbound_live is False and body["has_token"] is True
    fake.fail_register = False
    verified = api(scopes=["messengers:write"]).post(f"/api/v1/messengers/{fake.code}/verify", **idem())
    assert verified.status_code == 200
    assert verified.json()["webhook"] == {"attempted": True, "status": case.registration}


def test_a_refused_token_fails_the_registration_but_is_kept(api, fake, paid):
    if not CASES[fake.code].attempted:
        pytest.skip("no webhook mechanism")
    body = put(api, fake, body_for(fake, token=BAD)).json()
    assert body["webhook"]["status"] == "failed" and body["webhook"]["detail"]
    assert MessengerConnection.objects.get().inbound_live is False


def test_verify_of_a_provider_without_registration_answers_attempted_false(api, fake, paid):
    if CASES[fake.code].attempted:
        pytest.skip("registers")
    connect(api, fake)
    response = api(scopes=["messengers:write"]).post(f"/api/v1/messengers/{fake.code}/verify", **idem())
    assert response.json()["webhook"] == {"attempted": False, "status": "not_supported"}


def test_delete_removes_at_the_provider_where_it_can_and_forgets(api, fake, paid, settings):
    conn = connect(api, fake)
    before = len(fake.calls)
    assert api(scopes=["messengers:write"]).delete(f"/api/v1/messengers/{fake.code}").status_code == 204
    after = fake.calls[before:]
    if fake.code == "cian":  # the one generic provider with a real unregister call
        assert [c.path for c in after] == ["/v1/chats/unsubscribe-webhook"]
        assert after[0].body["url"].startswith(f"https://chat.example.com/api/hooks/cian/{conn.hook_id}/")
    else:
        assert after == []
    assert not MessengerConnection.objects.exists()


def test_delete_is_not_blocked_by_an_absent_provider(api, fake, paid, settings):
    connect(api, fake)
    setattr(settings, f"PROVIDER_API_BASE_{fake.code.upper()}", "https://127.0.0.1:9")
    assert api(scopes=["messengers:write"]).delete(f"/api/v1/messengers/{fake.code}").status_code == 204
    assert not MessengerConnection.objects.exists()


def test_put_needs_a_paid_plan_and_validation_is_strict(api, widget, fake):
    assert_problem(put(api, fake), 409, "plan_required")
    plan = Plan.objects.create(slug="test-pro", name="Test Pro", is_paid=True, paid_features=["messengers"])
    AccountPlan.objects.create(account=widget.account, plan=plan)
    good = body_for(fake)
    bad_bodies = [{**good, "extra": 1}, {k: v for k, v in good.items() if k != "token"}, {**good, "token": "a b"}]
    if fake.code in ("wa", "apple"):
        bad_bodies.append({k: v for k, v in good.items() if k != "sid"})
    else:
        bad_bodies.append({**good, "sid": SID})
    if fake.code == "apple":
        bad_bodies += [{**good, "url": "http://127.0.0.1/v1/message"}, {**good, "url": "https://10.0.0.1/x"}]
    for body in bad_bodies:
        assert_problem(put(api, fake, body), 422)
    assert fake.calls == [] and not MessengerConnection.objects.exists()


# --- inbound --------------------------------------------------------------------------------------


def test_an_inbound_message_makes_the_contact_and_chat_once(client, api, widget, fake, paid):
    conn = connect(api, fake)
    first = deliver(client, conn, event(fake.code, "1001"))
    assert first.status_code == 200, first.content
    assert deliver(client, conn, event(fake.code, "1001")).status_code == 200  # redelivered
    chat = Chat.objects.get(widget=widget)
    assert chat.channel == fake.code
    assert list(chat.messages.values_list("body", flat=True)) == ["Hello"]
    if fake.code not in ("fb", "apple"):  # these events carry no name
        assert chat.contact.name == "Ivan Petrov"
    assert deliver(client, conn, event(fake.code, "1002", "again")).status_code == 200
    assert chat.messages.count() == 2 and InboundUpdate.objects.filter(provider=fake.code).count() == 2


def test_after_a_failed_registration_the_hook_answers_as_a_missing_one_until_verify_succeeds(
    client, api, widget, fake, paid
):
    if not CASES[fake.code].attempted:
        pytest.skip("no webhook mechanism: nothing to fail")
    fake.fail_register = True
    conn = connect(api, fake)
    refused = deliver(client, conn, event(fake.code, "1001"))
    missing = client.post(f"/api/hooks/{fake.code}/hook-none-0123456/", data=b"{}", content_type="application/json")
    assert refused.status_code == missing.status_code == 404
    assert {k: v for k, v in refused.json().items() if k != "instance"} == {
        k: v for k, v in missing.json().items() if k != "instance"
    }
    assert not Message.objects.exists() and not InboundUpdate.objects.exists()
    fake.fail_register = False
    assert api(scopes=["messengers:write"]).post(f"/api/v1/messengers/{fake.code}/verify", **idem()).status_code == 200
    assert deliver(client, conn, event(fake.code, "1001")).status_code == 200
    assert Message.objects.count() == 1


def test_a_forged_signature_is_refused_and_stores_nothing(client, api, fake, paid):
    conn = connect(api, fake)
    response = deliver(client, conn, event(fake.code, "1001"), forged=True)
    assert_problem(response, 401, "invalid_signature")
    bare = client.post(f"/api/hooks/{fake.code}/{conn.hook_id}/", data=b"{}", content_type="application/json")
    assert_problem(bare, 401)
    assert not Chat.objects.exists() and not InboundUpdate.objects.exists()


def test_meta_callbacks_are_refused_without_an_app_secret(client, api, fake, paid, settings):
    if fake.code not in ("fb", "wa"):
        pytest.skip("Meta only")
    conn = connect(api, fake)
    settings.PROVIDER_APP_SECRET_FB = settings.PROVIDER_APP_SECRET_WA = ""
    assert_problem(deliver(client, conn, event(fake.code, "1001")), 401)


def test_meta_verifies_the_callback_url_with_the_deployment_verify_token(client, api, fake, paid, settings):
    conn = connect(api, fake)
    settings.PROVIDER_VERIFY_TOKEN_FB = settings.PROVIDER_VERIFY_TOKEN_WA = "verify-me"
    url = f"/api/hooks/{fake.code}/{conn.hook_id}/"
    query = {"hub.mode": "subscribe", "hub.verify_token": "verify-me", "hub.challenge": "1158201444"}
    response = client.get(url, query)
    if fake.code not in ("fb", "wa"):
        assert_problem(response, 404)
        return
    assert response.status_code == 200 and response.content == b"1158201444"
    assert_problem(client.get(url, {**query, "hub.verify_token": "guess"}), 404)
    settings.PROVIDER_VERIFY_TOKEN_FB = settings.PROVIDER_VERIFY_TOKEN_WA = ""
    assert_problem(client.get(url, {**query, "hub.verify_token": ""}), 404)


def test_a_signed_meta_event_of_another_page_or_number_is_acknowledged_and_dropped(client, api, fake, paid):
    """The app secret signs every page's events: the hook takes only its own page's (number's)."""
    if fake.code not in ("fb", "wa"):
        pytest.skip("Meta only")
    conn = connect(api, fake)
    payload = event(fake.code, "1001")
    if fake.code == "fb":
        payload["entry"][0]["id"] = payload["entry"][0]["messaging"][0]["recipient"]["id"] = "5550001111"
        mixed = event(fake.code, "1002")  # our entry id, another page as the recipient
        mixed["entry"][0]["messaging"][0]["recipient"]["id"] = "5550001111"
    else:
        payload["entry"][0]["changes"][0]["value"]["metadata"]["phone_number_id"] = "5550001111"
        mixed = payload
    assert deliver(client, conn, payload).status_code == 200
    assert deliver(client, conn, mixed).status_code == 200
    assert not Chat.objects.exists() and not InboundUpdate.objects.exists()
    assert deliver(client, conn, event(fake.code, "1003")).status_code == 200  # its own page's event
    assert Chat.objects.count() == 1


def test_messenger_takes_no_event_until_the_page_id_is_known(client, api, fake, paid):
    if fake.code != "fb":
        pytest.skip("Messenger only")
    fake.valid_tokens = set()  # `GET /me` refused: the page is unknown
    body = put(api, fake).json()
    assert body["webhook"]["status"] == "failed" and "page id" in body["webhook"]["detail"]
    conn = MessengerConnection.objects.get()
    assert deliver(client, conn, event(fake.code, "1001")).status_code == 404  # not live: a missing hook
    assert not Chat.objects.exists()
    fake.valid_tokens = {TOKEN}
    verified = api(scopes=["messengers:write"]).post("/api/v1/messengers/fb/verify", **idem())
    assert verified.json()["webhook"] == {"attempted": False, "status": "not_supported"}
    assert deliver(client, conn, event(fake.code, "1002")).status_code == 200
    assert Chat.objects.count() == 1


@pytest.mark.parametrize(
    "claims",
    [
        {"aud": SID},  # no exp: it would never lapse
        {"aud": SID, "exp": 2 * 3600},  # relative: read as the epoch, long past
        {"aud": SID, "exp": "+60"},
        {"aud": SID, "exp": float("inf")},
        {"aud": SID, "exp": "NOW + 2 days"},
        {"aud": SID, "exp": "LONG"},  # an exp over the one-hour maximum
        {"aud": SID, "iat": "OLD", "exp": "SOON"},  # issued two hours before its exp
    ],
)
def test_an_apple_gateway_token_without_exp_or_living_over_an_hour_is_refused(client, api, fake, paid, claims):
    if fake.code != "apple":
        pytest.skip("Apple only")
    conn = connect(api, fake)
    now = int(time.time())
    times = {"NOW + 2 days": now + 2 * 86400, "LONG": now + 3600 + 120, "OLD": now - 7200 + 60, "SOON": now + 60}
    claims = {k: times.get(v, v) if isinstance(v, str) and k != "aud" else v for k, v in claims.items()}
    raw = json.dumps(event("apple", "1001")).encode()
    jwt = apple_provider.sign_jwt(TOKEN, claims)
    headers = {"HTTP_AUTHORIZATION": f"Bearer {jwt}", "HTTP_DESTINATION_ID": SID, "HTTP_SOURCE_ID": "x"}
    response = client.post(f"/api/hooks/apple/{conn.hook_id}/", data=raw, content_type="application/json", **headers)
    assert_problem(response, 401, "invalid_signature")
    assert not Chat.objects.exists()


def test_an_apple_gateway_token_within_the_hour_is_accepted():
    now = int(time.time())
    assert apple_provider.verify_jwt(TOKEN, apple_provider.sign_jwt(TOKEN, {"iat": now, "exp": now + 3600}))
    assert not apple_provider.verify_jwt(TOKEN, apple_provider.sign_jwt(TOKEN, {"iat": now, "exp": now + 3601}))


def test_events_without_user_text_are_acknowledged(client, api, fake, paid):
    conn = connect(api, fake)
    payload = event(fake.code, "1001", text="   ")
    assert deliver(client, conn, payload).status_code == 200
    assert deliver(client, conn, {"something": "else"}).status_code == 200
    assert not Chat.objects.exists()


# --- outbound -------------------------------------------------------------------------------------


def _operator_keyboard(widget, chat):
    keyboard = {
        "buttons": [
            {"label": "Track", "url": "https://example.com/t", "style": "primary"},
            {"label": "Help", "url": "https://example.com/h", "style": "secondary"},
        ]
    }
    return chat_services.post_agent_message(
        widget=widget,
        chat=chat,
        agent=AgentFactory(widget=widget),
        data=chat_services.MessageInput(type=Message.Type.KEYBOARD, body="Pick", keyboard=keyboard),
    )


def expected_send(code: str, call) -> None:
    """The send call exactly as the provider's API takes it."""
    case = CASES[code]
    if code == "vb":
        assert call.path == "/pa/send_message" and call.headers["x-viber-auth-token"] == TOKEN
        assert call.body == {
            "receiver": case.address,
            "min_api_version": 1,
            "sender": {"name": "Support"},
            "type": "text",
            "text": KEYBOARD_TEXT,
        }
    elif code == "fb":
        assert call.path == "/v19.0/me/messages" and call.headers["authorization"] == f"Bearer {TOKEN}"
        assert call.body == {
            "recipient": {"id": case.address},
            "messaging_type": "RESPONSE",
            "message": {"text": KEYBOARD_TEXT},
        }
    elif code == "wa":
        assert call.path == f"/v19.0/{SID}/messages" and call.headers["authorization"] == f"Bearer {TOKEN}"
        assert call.body == {
            "messaging_product": "whatsapp",
            "recipient_type": "individual",
            "to": case.address,
            "type": "text",
            "text": {"preview_url": True, "body": KEYBOARD_TEXT},
        }
    elif code == "ok":
        assert call.path == f"/graph/me/messages/{case.address}" and call.query == {"access_token": TOKEN}
        assert call.body == {"recipient": {"chat_id": case.address}, "message": {"text": KEYBOARD_TEXT}}
    elif code == "mx":
        assert call.path == "/messages" and call.query == {"chat_id": case.address}
        assert call.headers["authorization"] == TOKEN and call.body == {"text": KEYBOARD_TEXT}
    elif code == "cian":
        assert call.path == "/v1/chats/send-message" and call.headers["authorization"] == f"Bearer {TOKEN}"
        assert call.body == {"chatId": case.address, "text": KEYBOARD_TEXT}
    elif code == "ali":
        assert call.path == "/im/message/send" and call.headers["authorization"] == f"Bearer {TOKEN}"
        assert call.body == {"conversation_id": case.address, "content": {"type": "text", "text": KEYBOARD_TEXT}}
    else:
        assert call.path == "/v1/message"
        assert apple_provider.verify_jwt(TOKEN, call.headers["authorization"][7:])
        assert call.headers["source-id"] == SID and call.headers["destination-id"] == case.address
        assert call.body == {
            "v": 1,
            "type": "text",
            "id": call.headers["id"],
            "sourceId": SID,
            "destinationId": case.address,
            "body": KEYBOARD_TEXT,
        }


def test_an_operator_keyboard_message_reaches_the_provider_as_text_and_link_lines(client, api, widget, fake, paid):
    conn = connect(api, fake)
    deliver(client, conn, event(fake.code, "1001"))
    chat = Chat.objects.get()
    _operator_keyboard(widget, chat)
    with CaptureQueriesContext(connection) as queries:
        assert engine.deliver_due(concurrency=1, max_seconds=10) == 1
    # the row, its endpoint and its widget were read with the lease: no deferred field read on its own
    assert not [query["sql"] for query in queries if '"id" = ' in query["sql"] and "LIMIT 21" in query["sql"]]
    (sent,) = fake.sends()
    expected_send(fake.code, sent)
    row = Delivery.objects.get(endpoint__owner="messenger:" + fake.code)
    assert row.status == "delivered" and TOKEN not in row.body and SID not in row.body
    assert row.attempt_rows.count() == 1


def test_a_transient_refusal_retries_and_a_final_one_stops(client, api, widget, fake, paid, triggers):
    conn = connect(api, fake)
    deliver(client, conn, event(fake.code, "1001"))
    chat = Chat.objects.get()
    agent = AgentFactory(widget=widget)
    fake.throttle_sends = 1
    first = chat_services.post_agent_message(
        widget=widget, chat=chat, agent=agent, data=chat_services.MessageInput(body="Hi")
    )
    row = Delivery.objects.get(message=first)
    assert engine.attempt_delivery(row.pk) == "pending"
    if fake.code not in ("vb", "ok"):  # HTTP 429 with Retry-After: waited at least that long
        assert triggers[-1] == fake.retry_after
    row.refresh_from_db()
    assert row.attempts == 1 and row.last_error
    assert engine.attempt_delivery(row.pk) == "delivered"
    fake.fail_sends = True
    second = chat_services.post_agent_message(
        widget=widget, chat=chat, agent=agent, data=chat_services.MessageInput(body="Again")
    )
    other = Delivery.objects.get(message=second)
    assert engine.attempt_delivery(other.pk) == "failed"


def test_nothing_is_queued_once_the_provider_is_disconnected(client, api, widget, fake, paid):
    conn = connect(api, fake)
    deliver(client, conn, event(fake.code, "1001"))
    chat = Chat.objects.get()
    api(scopes=["messengers:write"]).delete(f"/api/v1/messengers/{fake.code}")
    _operator_keyboard(widget, chat)
    assert not Delivery.objects.exists()
