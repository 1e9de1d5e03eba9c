"""Every provider's inbound hook against hostile bodies that pass its authentication (signed with
the right key, or carrying the right secret): not JSON, JSON of the wrong top-level type, every
member of a valid event replaced by null, a boolean, a number, a blank or unstorable string, a list,
an object, a deep or a huge structure, unknown event types, oversize texts, NUL and lone surrogates.

The rules: never a 500; a body that is not a JSON object is a 422 problem; any JSON object is
answered as the provider expects (acknowledged, so it does not retry) unless its own authentication
member is what was replaced (VK's `secret` and `group_id`, Telegram's `update_id`); nothing is
stored from an invalid member; and the valid event is still taken afterwards."""

from __future__ import annotations

import base64
import copy
import hmac
import json
import logging
import re
import time

import pytest
from django.db import transaction
from django.test import Client

from apps.channels import messengers
from apps.channels.models import ExternalContact, InboundUpdate, MessengerConnection, VkCommunity
from apps.channels.providers import apple as apple_provider
from apps.channels.providers import registry, telegram
from apps.channels.providers.base import HOOK_MESSAGES_LIMIT, hmac_hex
from apps.channels.tests.test_providers import APP_SECRET, SID, TOKEN, event
from apps.chats.models import Chat, Contact, Message
from apps.core import crypto
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

TG_TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
VK_GROUP = 218000001
FB_PAGE = "1029384756"
HOOK_SECRET = "hook-secret-0123456789abcdef"
PROVIDERS = list(registry.PROVIDERS)
TEXT_LIMIT = 65536

DEEP = json.loads("[" * 50 + "]" * 50)  # inside the reader's nesting limit: it reaches the parser
REPLACEMENTS = {
    "null": None,
    "true": True,
    "zero": 0,
    "float": 1.5,
    "huge_int": 10**30,
    "blank": "   ",
    "nul": "Hel\u0000lo",
    "surrogate": "Hel\ud800lo",
    "oversize": "x" * (TEXT_LIMIT + 1),
    "empty_list": [],
    "list": [1, "a", None, {}],
    "object": {"id": {"id": 1}, "text": ["Hello"]},
    "deep": DEEP,
    "huge": [{}] * 5000,
}


def valid(code: str, update_id: str = "1001", text: str = "Hello") -> dict:
    if code == "tg":
        return {
            "update_id": int(update_id),
            "message": {
                "message_id": 7,
                "from": {"id": 42, "is_bot": False, "first_name": "Ivan", "last_name": "Petrov"},
                "chat": {"id": 42, "type": "private"},
                "date": 1700000000,
                "text": text,
            },
        }
    if code == "vk":
        return {
            "type": "message_new",
            "event_id": f"ev-{update_id}",
            "v": "5.199",
            "group_id": VK_GROUP,
            "secret": HOOK_SECRET,
            "object": {"message": {"id": 11, "from_id": 777, "peer_id": 777, "text": text, "date": 1700000000}},
        }
    return event(code, update_id, text)


@pytest.fixture(params=PROVIDERS)
def hook(request, widget, settings) -> MessengerConnection:
    """A live hook of one provider, stored as PUT (or the VK community flow) leaves it."""
    code = request.param
    settings.PROVIDER_APP_SECRET_FB = settings.PROVIDER_APP_SECRET_WA = APP_SECRET
    sid = {"wa": SID, "apple": SID, "fb": FB_PAGE}.get(code, "")
    conn = MessengerConnection.objects.create(
        widget=widget,
        provider=code,
        token_encrypted="" if code == "vk" else crypto.encrypt_secret(TG_TOKEN if code == "tg" else TOKEN),
        sid_encrypted=crypto.encrypt_secret(sid) if sid else "",
        url="https://gateway.example.com/v1/message" if code == "apple" else "",
        hook_id=f"hook-{code}-0123456789",
        hook_secret_encrypted=crypto.encrypt_secret(HOOK_SECRET),
        inbound_live=True,
    )
    if code == "vk":
        VkCommunity.objects.create(
            widget=widget,
            community_id=VK_GROUP,
            token_encrypted=crypto.encrypt_secret("vk1.a.community-token"),
            secret_encrypted=crypto.encrypt_secret(HOOK_SECRET),
            confirmation_code="c0nf1rm",
            is_primary=True,
        )
    return conn


def post(conn: MessengerConnection, raw: bytes):
    """The hook call with the provider's own authentication of these exact bytes."""
    code, headers, query = conn.provider, {}, ""
    if code == "tg":
        headers["HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN"] = HOOK_SECRET
    elif code == "vb":
        headers["HTTP_X_VIBER_CONTENT_SIGNATURE"] = hmac_hex(TOKEN, raw)
    elif code in ("fb", "wa"):
        headers["HTTP_X_HUB_SIGNATURE_256"] = "sha256=" + hmac_hex(APP_SECRET, raw)
    elif code == "mx":
        headers["HTTP_X_MAX_BOT_API_SECRET"] = HOOK_SECRET
    elif code == "apple":
        jwt = apple_provider.sign_jwt(TOKEN, {"aud": SID, "exp": int(time.time()) + 60})
        headers |= {"HTTP_AUTHORIZATION": f"Bearer {jwt}", "HTTP_DESTINATION_ID": SID, "HTTP_SOURCE_ID": "x"}
    elif code in ("ok", "cian", "ali"):
        query = f"?token={HOOK_SECRET}"
    client = Client(raise_request_exception=False)
    return client.post(
        f"/api/hooks/{code}/{conn.hook_id}/{query}", data=raw, content_type="application/json", **headers
    )


def stored() -> dict[str, int]:
    return {
        "messages": Message.objects.count(),
        "chats": Chat.objects.count(),
        "contacts": Contact.objects.count(),
        "external": ExternalContact.objects.count(),
        "updates": InboundUpdate.objects.count(),
    }


NOTHING = {"messages": 0, "chats": 0, "contacts": 0, "external": 0, "updates": 0}


def paths(node, prefix=()):
    """Every member of a JSON value, as (key or index, ...) paths, outermost first."""
    children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in children:
        yield (*prefix, key)
        yield from paths(child, (*prefix, key))


def replaced(body: dict, path: tuple, value) -> dict:
    body = copy.deepcopy(body)
    node = body
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return body


def printed(value: str) -> bool:
    """Whether a stored string is a non-string JSON value turned into text."""
    return value[:1] in "[{" or value in ("True", "False", "None") or bool(re.fullmatch(r"-?\d+\.\d+", value))


def clean(value: str, limit: int) -> bool:
    return (
        bool(value.strip())
        and len(value) <= limit
        and "\x00" not in value
        and not re.search("[\ud800-\udfff]", value)
        and not printed(value)
    )


def allowed_statuses(code: str, path: tuple) -> set[int]:
    """The answer to a JSON object with one member replaced: acknowledged (200), or the refusal of
    the member that authenticates or routes the event."""
    if code == "vk" and path == ("group_id",):
        return {404, 422}
    if code == "vk" and path == ("secret",):
        return {401}
    if code == "tg" and path == ("update_id",):
        return {200, 422}
    return {200}


def check(response, allowed: set[int]) -> str:
    """ "" when the answer is one of `allowed` and shaped as the route answers, else the problem."""
    if response.status_code not in allowed:
        return f"HTTP {response.status_code}: {response.content[:300]!r}"
    if response.status_code >= 400 and response["Content-Type"] != "application/problem+json":
        return f"HTTP {response.status_code} as {response['Content-Type']}"
    return ""


def rows_problem() -> str:
    """ "" when nothing, or one message of clean text from a clean user, was stored."""
    counts = stored()
    if counts == NOTHING:
        return ""
    if counts["messages"] != 1 or counts["updates"] != 1:
        return f"stored {counts}"
    message = Message.objects.get()
    link = ExternalContact.objects.get()
    contact = Contact.objects.get()
    for label, value, limit in (
        ("body", message.body, TEXT_LIMIT),
        ("external_id", link.external_id, 255),
        ("address", link.address, 255),
    ):
        if not clean(value, limit):
            return f"stored {label} {value[:80]!r}"
    if len(contact.name) > 255 or any(printed(word) for word in contact.name.split()):
        return f"stored name {contact.name[:80]!r}"
    return ""


# --- bodies that are not a JSON object ------------------------------------------------------------

NOT_AN_OBJECT = {
    "empty": b"",
    "not_json": b"not json",
    "not_utf8": b'{"text": "\xff\xfe"}',
    "truncated": b'{"update_id": 1, "message": {',
    "nan": b'{"update_id": NaN}',
    "array": b"[]",
    "null": b"null",
    "number": b"1",
    "string": b'"message"',
    "too_deep": b"[" * 100 + b"]" * 100,
    "deep_objects": b'{"a":' * 5000 + b"1" + b"}" * 5000,
    "long_number": b'{"update_id": ' + b"9" * 5000 + b"}",
}


@pytest.mark.parametrize("raw", NOT_AN_OBJECT.values(), ids=NOT_AN_OBJECT.keys())
def test_a_body_that_is_not_a_json_object_is_422_and_stores_nothing(hook, raw):
    response = post(hook, raw)
    assert check(response, {422}) == ""
    assert stored() == NOTHING


# --- a valid event with one member replaced -------------------------------------------------------


@pytest.mark.parametrize("kind", REPLACEMENTS, ids=list(REPLACEMENTS))
def test_a_member_of_the_wrong_type_is_never_a_500_and_stores_nothing_invalid(hook, kind):
    body, failures = valid(hook.provider), []
    for path in list(paths(body)):
        with transaction.atomic():
            response = post(hook, json.dumps(replaced(body, path, REPLACEMENTS[kind])).encode())
            problem = check(response, allowed_statuses(hook.provider, path)) or rows_problem()
            if problem:
                failures.append(f"{'.'.join(map(str, path))}: {problem}")
            transaction.set_rollback(True)
    assert failures == []
    assert post(hook, json.dumps(body).encode()).status_code == 200
    assert Message.objects.get().body == "Hello"


def test_an_unknown_event_type_is_acknowledged_and_stores_nothing(hook):
    body = valid(hook.provider)
    discriminator = {
        "tg": None,
        "vk": ("type",),
        "wa": ("entry", 0, "changes", 0, "field"),
        "vb": ("event",),
        "fb": ("object",),
        "ok": ("webhookType",),
        "mx": ("update_type",),
        "cian": ("eventType",),
        "ali": ("event_type",),
        "apple": ("type",),
    }[hook.provider]
    if discriminator is None:  # Telegram names the update's kind by its member
        body["edited_message"] = body.pop("message")
    else:
        body = replaced(body, discriminator, "something_new")
    assert check(post(hook, json.dumps(body).encode()), {200}) == ""
    assert stored() == NOTHING


def text_path(code: str) -> tuple:
    body = valid(code, text="@@TEXT@@")
    return next(p for p in paths(body) if _at(body, p) == "@@TEXT@@")


def _at(node, path):
    for key in path:
        node = node[key]
    return node


@pytest.mark.parametrize(
    "text",
    [
        "x" * (TEXT_LIMIT + 1),
        "Hello\u0000",
        "\ud800",
        "Hello \udfff world",
        "\u0000",
    ],
    ids=["oversize", "nul", "lone_high", "lone_low", "only_nul"],
)
def test_a_text_the_database_cannot_hold_is_acknowledged_and_stores_nothing(hook, text):
    body = replaced(valid(hook.provider), text_path(hook.provider), text)
    assert check(post(hook, json.dumps(body).encode()), {200}) == ""
    assert stored() == NOTHING


def test_the_longest_text_and_unusual_but_valid_unicode_are_taken(hook):
    longest = "y" * TEXT_LIMIT
    assert post(hook, json.dumps(valid(hook.provider, "1001", longest)).encode()).status_code == 200
    odd = "\u202eRTL \U0001f600 e\u0301 \u200b zero-width"
    assert post(hook, json.dumps(valid(hook.provider, "1002", odd), ensure_ascii=False).encode()).status_code == 200
    assert sorted(Message.objects.values_list("body", flat=True)) == sorted([longest, odd])


# --- Apple's gateway token and addressing ---------------------------------------------------------


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def gateway_token(header: bytes, claims: bytes, secret: str = TOKEN) -> str:
    """A token signed with the gateway's secret around any header and claims bytes."""
    signing_input = f"{b64(header)}.{b64(claims)}"
    return f"{signing_input}.{b64(hmac.new(secret.encode(), signing_input.encode(), 'sha256').digest())}"


HS256 = b'{"alg":"HS256","typ":"JWT"}'
SOON = str(int(time.time()) + 60).encode()
HOSTILE_TOKENS = {
    "huge_exp": gateway_token(HS256, b'{"exp":' + b"9" * 400 + b"}"),
    "huge_negative_iat": gateway_token(HS256, b'{"exp":' + SOON + b',"iat":-' + b"9" * 400 + b"}"),
    "float_exp": gateway_token(HS256, b'{"exp":1e400}'),
    "deep_header": gateway_token(b"[" * 5000 + b"]" * 5000, b'{"exp":' + SOON + b"}"),
    "deep_claims": gateway_token(HS256, b'{"a":' * 5000 + b"1" + b"}" * 5000),
    "claims_a_list": gateway_token(HS256, b"[1]"),
    "claims_not_json": gateway_token(HS256, b"\xff\xfe"),
    "not_ascii": "\u00e9.\u00e9.\u00e9",
    "two_parts": f"{b64(HS256)}.{b64(b'{}')}",
}


@pytest.mark.parametrize("hook", ["apple"], indirect=True)
@pytest.mark.parametrize("token", HOSTILE_TOKENS.values(), ids=HOSTILE_TOKENS.keys())
def test_a_hostile_apple_gateway_token_is_refused_with_401(hook, token):
    response = Client(raise_request_exception=False).post(
        f"/api/hooks/apple/{hook.hook_id}/",
        data=json.dumps(valid("apple")).encode(),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
        HTTP_DESTINATION_ID=SID,
    )
    assert check(response, {401}) == ""
    assert stored() == NOTHING


@pytest.mark.parametrize("hook", ["apple"], indirect=True)
def test_an_apple_message_to_another_business_of_the_gateway_is_acknowledged_and_dropped(hook):
    """The gateway's secret signs for each business it serves: the body names ours, as the header does."""
    for other in ("urn:mbid:another-business", None):
        body = replaced(valid("apple"), ("destinationId",), other)
        assert check(post(hook, json.dumps(body).encode()), {200}) == ""
    assert stored() == NOTHING
    assert post(hook, json.dumps(valid("apple")).encode()).status_code == 200
    assert Message.objects.count() == 1


# --- foreign and missing --------------------------------------------------------------------------


def test_a_hook_id_of_another_provider_is_answered_as_a_missing_one(widget):
    tg = MessengerConnection.objects.create(widget=widget, provider="tg", hook_id="hook-tg-0123456789")
    client = Client(raise_request_exception=False)
    foreign = client.post(f"/api/hooks/vb/{tg.hook_id}/", data=b"{}", content_type="application/json")
    missing = client.post("/api/hooks/vb/hook-none-0123456/", data=b"{}", content_type="application/json")
    assert foreign.status_code == missing.status_code == 404
    assert {k: v for k, v in foreign.json().items() if k != "instance"} == {
        k: v for k, v in missing.json().items() if k != "instance"
    }


def missing_answer(code: str) -> tuple[int, dict]:
    response = Client(raise_request_exception=False).post(
        f"/api/hooks/{code}/hook-none-0123456/", data=b"{}", content_type="application/json"
    )
    return response.status_code, {k: v for k, v in response.json().items() if k != "instance"}


def answer(response) -> tuple[int, dict]:
    return response.status_code, {k: v for k, v in response.json().items() if k != "instance"}


def test_an_authentic_call_to_a_connection_whose_inbound_is_not_live_is_answered_as_a_missing_one(hook):
    MessengerConnection.objects.filter(pk=hook.pk).update(inbound_live=False)
    response = post(hook, json.dumps(valid(hook.provider)).encode())
    assert answer(response) == missing_answer(hook.provider) and response.status_code == 404
    assert stored() == NOTHING
    MessengerConnection.objects.filter(pk=hook.pk).update(inbound_live=True)
    assert post(hook, json.dumps(valid(hook.provider)).encode()).status_code == 200
    assert Message.objects.count() == 1


@pytest.mark.parametrize("hook", ["tg"], indirect=True)
def test_telegram_in_long_poll_mode_answers_its_hook_as_a_missing_one(hook, settings):
    settings.TELEGRAM_LONG_POLL = True
    response = post(hook, json.dumps(valid("tg")).encode())
    assert answer(response) == missing_answer("tg") and response.status_code == 404
    assert stored() == NOTHING


@pytest.mark.parametrize("hook", ["fb"], indirect=True)
def test_meta_verification_of_a_connection_whose_inbound_is_not_live_is_answered_as_a_missing_one(hook, settings):
    settings.PROVIDER_VERIFY_TOKEN_FB = "verify-me"
    query = "?hub.mode=subscribe&hub.verify_token=verify-me&hub.challenge=42"
    client = Client(raise_request_exception=False)
    assert client.get(f"/api/hooks/fb/{hook.hook_id}/{query}").content == b"42"
    MessengerConnection.objects.filter(pk=hook.pk).update(inbound_live=False)
    response = client.get(f"/api/hooks/fb/{hook.hook_id}/{query}")
    missing = client.get(f"/api/hooks/fb/hook-none-0123456/{query}")
    assert answer(response) == answer(missing) and response.status_code == 404


@pytest.mark.parametrize("hook", ["vk"], indirect=True)
def test_a_vk_community_of_another_widget_is_answered_as_a_missing_one(hook, other_widget):
    VkCommunity.objects.create(
        widget=other_widget, community_id=VK_GROUP + 1, token_encrypted="x", secret_encrypted="x", is_primary=True
    )
    answers = []
    for group_id in (VK_GROUP + 1, VK_GROUP + 2):  # another widget's community, then none
        response = post(hook, json.dumps(replaced(valid("vk"), ("group_id",), group_id)).encode())
        answers.append((response.status_code, {k: v for k, v in response.json().items() if k != "instance"}))
    assert answers[0] == answers[1] and answers[0][0] == 404
    assert stored() == NOTHING


# --- floods ---------------------------------------------------------------------------------------


def test_a_flood_from_one_connection_is_429_with_retry_after_before_the_body_is_read(hook, settings):
    settings.MESSENGER_HOOK_CALLS_PER_MINUTE = 2
    for update_id in ("1001", "1002"):
        assert post(hook, json.dumps(valid(hook.provider, update_id)).encode()).status_code == 200
    refused = post(hook, json.dumps(valid(hook.provider, "1003")).encode())
    assert_problem(refused, 429, "rate_limited")
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert_problem(post(hook, b"not json"), 429, "rate_limited")  # refused before the body is parsed
    assert Message.objects.count() == 2


@pytest.mark.parametrize("hook", ["tg"], indirect=True)
def test_the_hook_budget_is_per_connection(hook, settings, other_widget):
    settings.MESSENGER_HOOK_CALLS_PER_MINUTE = 1
    other = MessengerConnection.objects.get(pk=hook.pk)
    other.pk, other.widget, other.hook_id = None, other_widget, "hook-tg-other-0123456789"
    other.save()
    assert post(hook, json.dumps(valid("tg", "1001")).encode()).status_code == 200
    assert post(hook, json.dumps(valid("tg", "1002")).encode()).status_code == 429
    assert post(other, json.dumps(valid("tg", "1003")).encode()).status_code == 200
    assert Message.objects.count() == 2


def batch(code: str, count: int) -> dict:
    """One Meta call carrying `count` user messages (Meta batches updates)."""
    body = valid(code)
    if code == "fb":
        (item,) = body["entry"][0]["messaging"]
        body["entry"][0]["messaging"] = [
            {**item, "message": {**item["message"], "mid": f"m_{n}"}} for n in range(count)
        ]
    else:
        value = body["entry"][0]["changes"][0]["value"]
        (item,) = value["messages"]
        value["messages"] = [{**item, "id": f"wamid.{n}"} for n in range(count)]
    return body


@pytest.mark.parametrize("hook", ["fb", "wa"], indirect=True)
def test_messages_over_the_limit_of_one_call_are_acknowledged_dropped_and_logged_once(hook, monkeypatch, caplog):
    monkeypatch.setattr(messengers, "HOOK_MESSAGES_LIMIT", 3)
    with caplog.at_level(logging.WARNING, logger="apps.channels.messengers"):
        response = post(hook, json.dumps(batch(hook.provider, 5)).encode())
    assert response.status_code == 200
    assert Message.objects.count() == InboundUpdate.objects.count() == 3
    (logged,) = [r for r in caplog.records if r.name == "apps.channels.messengers"]
    assert logged.messages == 5 and logged.stored == 3 and logged.provider == hook.provider


def test_the_limit_of_one_call_is_above_every_provider_batch():
    assert HOOK_MESSAGES_LIMIT >= 2 * 1000  # Meta batches up to 1000 updates; Telegram's getUpdates 100
    assert HOOK_MESSAGES_LIMIT >= 2 * telegram.POLL_LIMIT
