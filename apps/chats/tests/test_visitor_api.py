"""The visitor API /api/visitor/v1/{button_guid}/...: what the embed script speaks over HTTP."""

import json

import pytest
from django.core.files.base import ContentFile
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.agents.models import Agent
from apps.chats import services as chat_services
from apps.chats.models import Chat, Contact, File, Message, Rating, VisitorSession
from apps.chats.tests.factories import AgentFactory, ChatFactory, ContactFactory, MessageFactory
from apps.chats.visitor import auth
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

BASE = "/api/visitor/v1"


def url(widget, route: str) -> str:
    return f"{BASE}/{widget.button_guid}/{route}"


def post(client, widget, route: str, body=None, token: str | None = None, **extra):
    if token is not None:
        extra["HTTP_AUTHORIZATION"] = f"Visitor {token}"
    return client.post(url(widget, route), json.dumps(body or {}), content_type="application/json", **extra)


def get(client, widget, route: str, token: str | None = None, **params):
    extra = {"HTTP_AUTHORIZATION": f"Visitor {token}"} if token is not None else {}
    return client.get(url(widget, route), params, **extra)


def start(client, widget, **body) -> dict:
    response = post(client, widget, "sessions", body)
    assert response.status_code == 201, response.content
    return response.json()


@pytest.fixture
def session(client, widget) -> dict:
    return start(client, widget, name="Anna")


@pytest.fixture
def token(session) -> str:
    return session["session_token"]


@pytest.fixture
def contact(session) -> Contact:
    return Contact.objects.get(guid=session["client_id"])


def say(client, widget, token, body="Hello"):
    return post(client, widget, "messages", {"type": "text", "body": body}, token)


def room_of(contact) -> Chat:
    return Chat.objects.get(contact=contact, channel="widget")


def make_file(widget, name="a.png", content_type="image/png") -> File:
    return File.objects.create(
        widget=widget, stored=ContentFile(b"x", name=name), original_name=name, content_type=content_type, size=1
    )


# --- config ----------------------------------------------------------------------------------------


def test_config_is_public_and_cacheable(client, widget):
    response = get(client, widget, "config")
    assert response.status_code == 200
    body = response.json()
    # the widget app adds settings, texts and icon URLs on top of these members
    assert {k: body[k] for k in ("button_guid", "name", "language", "online")} == {
        "button_guid": widget.button_guid,
        "name": widget.name,
        "language": "auto",
        "online": False,
    }
    assert body["features"]["rating"] is True and body["features"]["offline_form"] is True
    assert response["Cache-Control"] == "public, max-age=60"
    assert response["Access-Control-Allow-Origin"] == "*"


def test_config_is_online_only_while_an_active_human_agent_has_a_console_open(client, widget):
    from apps.agents import presence

    # Given an active person, a person who chose away and an AI operator while the AI is off
    olga = AgentFactory(widget=widget)
    pavel = AgentFactory(widget=widget, status=Agent.Status.RELAXATION)
    AgentFactory(widget=widget, type=Agent.Type.AI)
    # Then nobody answers while no console is open, and away people do not count
    assert get(client, widget, "config").json()["online"] is False
    presence.connect(agent_id=pavel.pk, widget_id=widget.pk, socket_id="pavel-1")
    try:
        assert get(client, widget, "config").json()["online"] is False
        # When Olga's console socket connects, the cached config answers online at once
        presence.connect(agent_id=olga.pk, widget_id=widget.pk, socket_id="olga-1")
        assert get(client, widget, "config").json()["online"] is True
        # and offline again when it closes (no write, no cache purge)
        presence.disconnect(agent_id=olga.pk, widget_id=widget.pk, socket_id="olga-1")
        assert get(client, widget, "config").json()["online"] is False
    finally:
        presence.disconnect(agent_id=olga.pk, widget_id=widget.pk, socket_id="olga-1")
        presence.disconnect(agent_id=pavel.pk, widget_id=widget.pk, socket_id="pavel-1")


def test_an_agent_switching_to_away_makes_the_widget_offline(client, widget, live):
    from apps.agents import services as agent_services

    olga = AgentFactory(widget=widget)
    live.add(olga.pk)
    assert get(client, widget, "config").json()["online"] is True
    agent_services.set_agent_status(widget=widget, agent=olga, status=Agent.Status.RELAXATION)
    assert get(client, widget, "config").json()["online"] is False
    agent_services.set_agent_status(widget=widget, agent=olga, status=Agent.Status.ACTIVE)
    assert get(client, widget, "config").json()["online"] is True


def _answering_ai(widget, *, show_in_header: bool = True):
    """The built-in AI switched on, with an assistant, an active AI operator and a credential."""
    from apps.ai import services as ai_services
    from apps.ai.tests.factories import AiOperatorFactory, AssistantFactory, CredentialFactory

    assistant = AssistantFactory(widget=widget)
    operator = AiOperatorFactory(assistant=assistant, name="Robo", show_in_header=show_in_header)
    CredentialFactory(widget=widget)
    ai_services.update_settings(widget=widget, changes={"enabled": True})  # purges the config cache
    return operator


def test_the_answering_ai_makes_the_widget_online_and_its_operator_online_in_the_header(client, widget, live):
    from apps.ai import services as ai_services

    # Given nobody's console open and the AI answering
    AgentFactory(widget=widget, name="Olga")
    _answering_ai(widget)
    body = get(client, widget, "config").json()
    assert body["online"] is True
    assert [(o["name"], o["presence"]) for o in body["operators"]] == [("Robo", "online")]
    # When the AI is switched off, the widget is offline and the header agrees
    ai_services.update_settings(widget=widget, changes={"enabled": False})
    body = get(client, widget, "config").json()
    assert body["online"] is False
    assert body["operators"] == []  # the default mode lists online operators only


def test_the_ai_without_a_credential_or_an_active_operator_answers_nobody(client, widget, live):
    from apps.ai import services as ai_services
    from apps.ai.models import Credential
    from apps.widget.cache import purge_widget_cache

    operator = _answering_ai(widget)
    assert get(client, widget, "config").json()["online"] is True
    Credential.objects.filter(widget=widget).update(is_active=False)
    purge_widget_cache(widget_id=widget.pk)
    assert get(client, widget, "config").json()["online"] is False
    Credential.objects.filter(widget=widget).update(is_active=True)
    ai_services.update_operator(widget=widget, operator=operator, changes={"status": "paused"})
    assert get(client, widget, "config").json()["online"] is False


def test_the_ai_in_shadow_mode_answers_nobody(client, widget, live):
    from apps.ai import services as ai_services

    _answering_ai(widget)
    ai_services.update_settings(widget=widget, changes={"shadow_mode": True})
    body = get(client, widget, "config").json()
    assert body["online"] is False and body["operators"] == []


def test_an_active_external_operator_makes_the_widget_online(client, widget, live, settings):
    from apps.external import services as external_services
    from apps.external.tests.factories import make_operator
    from apps.widget.cache import purge_widget_cache

    settings.OUTBOUND_ALLOW_LOOPBACK = True
    operator = make_operator(widget)
    assert get(client, widget, "config").json()["online"] is True
    external_services.set_lifecycle(widget=widget, operator=operator, state="paused")
    # (a lifecycle change purges nothing: the cached answerers expire within ANSWERERS_TTL)
    purge_widget_cache(widget_id=widget.pk)
    assert get(client, widget, "config").json()["online"] is False


def test_cached_answerers_expire_within_their_ttl(client, widget, live, provide_port):
    from django.core.cache import cache

    from apps.core import ports

    # Given a warm config and a machine check that purges nothing when it changes
    answers = {"now": False}
    provide_port(ports.MACHINE_ANSWERER, lambda w: answers["now"], key="test")
    assert get(client, widget, "config").json()["online"] is False
    answers["now"] = True
    assert get(client, widget, "config").json()["online"] is False  # still cached
    # When the cached entry's TTL runs out (dropped here as the cache backend would)
    cache.delete_many([k for k in _answerer_keys(widget)])
    # Then the next read sees the machine
    assert get(client, widget, "config").json()["online"] is True


def _answerer_keys(widget) -> list[str]:
    from apps.widget.cache import entry_key

    return [entry_key("answerers", widget.pk)]


def test_answerers_are_cached_for_at_most_their_ttl(widget, monkeypatch):
    from apps.chats.visitor import services as visitor_services
    from apps.widget import cache as widget_cache

    seen = {}
    real_set = widget_cache.cache.set

    def spy(key, value, timeout=None, *args, **kwargs):
        seen[key] = timeout
        return real_set(key, value, timeout, *args, **kwargs)

    monkeypatch.setattr(widget_cache.cache, "set", spy)
    visitor_services.answerers(widget)
    assert seen[_answerer_keys(widget)[0]] == visitor_services.ANSWERERS_TTL


def test_a_failing_machine_check_counts_as_no_answer(client, widget, live, provide_port):
    from apps.core import ports

    def broken(widget):
        raise RuntimeError("boom")

    provide_port(ports.MACHINE_ANSWERER, broken, key="broken")
    response = get(client, widget, "config")
    assert response.status_code == 200 and response.json()["online"] is False


def test_visitor_api_works_with_the_rest_api_switched_off(client, widget):
    widget.api_enabled = False
    widget.save(update_fields=["api_enabled"])
    assert get(client, widget, "config").status_code == 200
    assert post(client, widget, "sessions").status_code == 201


@pytest.mark.parametrize("route", ["config", "messages"])
def test_unknown_button_guid_is_404(client, route):
    response = client.get(f"{BASE}/{'0' * 32}/{route}", HTTP_AUTHORIZATION="Visitor x")
    assert_problem(response, 404, "not_found")
    assert response["Access-Control-Allow-Origin"] == "*"


def test_unknown_button_guid_on_a_write_is_404_before_the_session(client):
    response = client.post(f"{BASE}/{'f' * 32}/messages", "{}", content_type="application/json")
    assert_problem(response, 404)


# --- sessions ----------------------------------------------------------------------------------------


def test_session_makes_a_contact_and_returns_its_token_once(client, widget):
    body = start(
        client,
        widget,
        name="Anna",
        email="anna@example.com",
        phone="+7 900 1",
        locale="ru-RU",
        page_url="https://shop.example/x",
    )
    assert set(body) == {"session_token", "client_id"}
    contact = Contact.objects.get(guid=body["client_id"], widget=widget)
    assert (contact.name, contact.email, contact.phone, contact.locale) == (
        "Anna",
        "anna@example.com",
        "+7 900 1",
        "ru-RU",
    )
    stored = VisitorSession.objects.get(contact=contact)
    assert stored.page_url == "https://shop.example/x"
    assert stored.token_hash == auth.hash_token(body["session_token"])
    assert body["session_token"] not in stored.token_hash
    assert body["session_token"].startswith("cvs_") and len(body["session_token"]) == 47


def test_session_answer_is_never_cached(client, widget):
    response = post(client, widget, "sessions")
    assert response["Cache-Control"] == "no-store"


def test_every_session_is_a_new_contact(client, widget):
    assert start(client, widget)["client_id"] != start(client, widget)["client_id"]


@pytest.mark.parametrize(
    "body",
    [
        {"nickname": "x"},
        {"email": "not-an-email"},
        {"page_url": "javascript:alert(1)"},
        {"page_url": "https://[::1"},
        {"locale": "x" * 20},
        {"name": 5},
    ],
)
def test_session_bad_body_is_422(client, widget, body):
    assert_problem(post(client, widget, "sessions", body), 422, "validation_failed")


def test_session_body_must_be_json(client, widget):
    response = client.post(url(widget, "sessions"), "name=Anna", content_type="application/x-www-form-urlencoded")
    assert_problem(response, 415, "unsupported_media_type")


def test_malformed_json_is_400(client, widget):
    response = client.post(url(widget, "sessions"), "{", content_type="application/json")
    assert_problem(response, 400, "invalid_json")


# --- authentication ---------------------------------------------------------------------------------


@pytest.mark.parametrize("route", ["messages", "typing", "rating", "offline"])
def test_missing_session_is_401_with_www_authenticate(client, widget, route):
    response = post(client, widget, route, {})
    assert_problem(response, 401, "visitor_session_required")
    assert response["WWW-Authenticate"].startswith("Visitor")


@pytest.mark.parametrize(
    "header", ["Visitor", "Visitor nonsense", "Visitor cvs_" + "A" * 43, "Bearer cvs_" + "A" * 43, "Basic dXNlcjpw"]
)
def test_bad_session_is_401(client, widget, header):
    response = client.get(url(widget, "messages"), HTTP_AUTHORIZATION=header)
    assert_problem(response, 401)
    assert response["WWW-Authenticate"].startswith("Visitor")


def test_session_of_another_widget_is_401(client, widget, other_widget):
    foreign = start(client, other_widget)["session_token"]
    response = get(client, widget, "messages", foreign)
    assert_problem(response, 401, "invalid_visitor_session")


def test_session_idle_longer_than_the_setting_is_401_and_use_keeps_it_alive(client, widget, settings):
    from datetime import timedelta

    from django.utils import timezone

    # given two sessions, one last seen 31 days ago and one 29 days ago, with 30 idle days allowed
    settings.VISITOR_SESSION_IDLE_DAYS = 30
    dead, alive = start(client, widget)["session_token"], start(client, widget)["session_token"]
    now = timezone.now()
    VisitorSession.objects.filter(token_hash=auth.hash_token(dead)).update(last_seen_at=now - timedelta(days=31))
    VisitorSession.objects.filter(token_hash=auth.hash_token(alive)).update(last_seen_at=now - timedelta(days=29))
    # when both are used
    refused, served = get(client, widget, "messages", dead), get(client, widget, "messages", alive)
    # then the idle one answers like an unknown token, and the other is seen again (its idle clock restarts)
    assert_problem(refused, 401, "invalid_visitor_session")
    assert served.status_code == 200
    seen = VisitorSession.objects.get(token_hash=auth.hash_token(alive)).last_seen_at
    assert seen > now - timedelta(minutes=1)


def test_purge_deletes_only_sessions_idle_past_the_setting(client, widget, settings):
    from datetime import timedelta

    from django.utils import timezone

    from apps.chats.tasks import purge_visitor_sessions

    settings.VISITOR_SESSION_IDLE_DAYS = 30
    tokens = [start(client, widget)["session_token"] for _ in range(4)]
    now = timezone.now()
    for token, days in zip(tokens, (40, 31, 29, 0), strict=True):
        VisitorSession.objects.filter(token_hash=auth.hash_token(token)).update(last_seen_at=now - timedelta(days=days))
    assert purge_visitor_sessions() == 2
    assert set(VisitorSession.objects.values_list("token_hash", flat=True)) == {auth.hash_token(t) for t in tokens[2:]}
    assert purge_visitor_sessions() == 0
    assert Contact.objects.filter(widget=widget).count() == 4  # the contacts and their chats stay


@pytest.mark.parametrize(
    ("hops", "forwarded", "expected"),
    [
        (0, "198.51.100.7", "192.0.2.1"),  # no proxy of ours: the header is the client's own words
        (1, "198.51.100.7", "198.51.100.7"),
        (1, "10.9.9.9, 198.51.100.7", "198.51.100.7"),  # a forged entry further left is ignored
        (2, "10.9.9.9, 198.51.100.7, 203.0.113.5", "198.51.100.7"),
        (2, "198.51.100.7", "192.0.2.1"),  # did not pass both proxies
        (1, None, "192.0.2.1"),
    ],
)
def test_client_address_trusts_only_our_proxy_hops(settings, hops, forwarded, expected):
    settings.TRUSTED_PROXY_HOPS = hops
    assert auth.address_from("192.0.2.1", forwarded) == expected


def test_per_address_limit_behind_a_proxy_counts_the_forwarded_client(client, widget, settings):
    # given one proxy of ours in front: every request reaches the app from the proxy's address
    settings.TRUSTED_PROXY_HOPS = 1
    settings.VISITOR_SESSIONS_PER_ADDRESS_PER_HOUR = 1
    via_proxy = {"REMOTE_ADDR": "10.0.0.2"}
    # when two clients each start a session, and the first tries again with a forged entry on the left
    first = post(client, widget, "sessions", HTTP_X_FORWARDED_FOR="198.51.100.7", **via_proxy)
    second = post(client, widget, "sessions", HTTP_X_FORWARDED_FOR="198.51.100.8", **via_proxy)
    again = post(client, widget, "sessions", HTTP_X_FORWARDED_FOR="1.2.3.4, 198.51.100.7", **via_proxy)
    # then each client had its own budget, and the forged entry did not buy a new one
    assert (first.status_code, second.status_code) == (201, 201)
    assert_problem(again, 429, "rate_limited")


def test_bearer_api_token_is_not_a_visitor_session(client, widget, make_token):
    response = client.get(url(widget, "messages"), HTTP_AUTHORIZATION=f"Bearer {make_token()}")
    assert_problem(response, 401)


# --- messages ------------------------------------------------------------------------------------------


def test_first_message_makes_the_room_and_emits_chat_created(client, widget, token, contact, captured_events):
    response = say(client, widget, token)
    assert response.status_code == 201
    body = response.json()
    chat = room_of(contact)
    message = Message.objects.get(pk=body["id"])
    assert body == {"id": message.pk, "chat_id": chat.pk, "created_at": message.created_at.isoformat()}
    assert (message.author_kind, message.body, message.visibility) == ("client", "Hello", "public")
    bg = widget.button_guid
    assert captured_events() == [
        ("chat.created", {"chat_id": chat.pk, "client_id": contact.guid, "source": "visitor", "button_guid": bg}),
        (
            "message.created",
            {
                "chat_id": chat.pk,
                "message_id": message.pk,
                "client_id": contact.guid,
                "author_type": "USER",
                "source": "visitor",
                "button_guid": bg,
            },
        ),
    ]


def test_second_message_writes_into_the_same_room_without_chat_created(client, widget, token, captured_events):
    first = say(client, widget, token, "one").json()
    second = say(client, widget, token, "two").json()
    assert first["chat_id"] == second["chat_id"]
    types = [t for t, _ in captured_events()]
    assert types == ["chat.created", "message.created", "message.created"]


@pytest.mark.django_db(transaction=True)
def test_a_message_is_written_in_one_transaction_without_a_savepoint(client, widget, token):
    # given a room (statements compiled)
    assert say(client, widget, token, "first").status_code == 201
    # when the visitor writes again
    with CaptureQueriesContext(connection) as ctx:
        assert say(client, widget, token, "second").status_code == 201
    # then the message, its rollups and its outbox row are one transaction with no savepoint
    assert not [q["sql"] for q in ctx.captured_queries if "SAVEPOINT" in q["sql"].upper()]


def test_message_into_an_expired_room_reopens_it(client, widget, token, contact):
    say(client, widget, token)
    Chat.objects.filter(contact=contact).update(status=Chat.Status.EXPIRED)
    assert say(client, widget, token).status_code == 201
    assert room_of(contact).status == Chat.Status.ACTIVE


def test_message_into_a_spam_room_is_409(client, widget, token, contact, captured_events):
    say(client, widget, token)
    Chat.objects.filter(contact=contact).update(status=Chat.Status.SPAM)
    assert_problem(say(client, widget, token), 409, "chat_is_spam")
    assert [t for t, _ in captured_events()] == ["chat.created", "message.created"]


def test_body_of_4096_characters_is_accepted(client, widget, token):
    assert say(client, widget, token, "я" * 4096).status_code == 201


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"type": "text", "body": ""}, "body"),
        ({"type": "text", "body": "   \n"}, "body"),
        ({"type": "text", "body": "x" * 4097}, "body"),
        ({"type": "text"}, "body"),
        ({"type": "text", "body": "x", "extra": 1}, "extra"),
        ({"type": "keyboard", "body": "x"}, "type"),
        ({"type": "file"}, "file_id"),
        ({"type": "file", "file_id": "1"}, "file_id"),
        ({"type": "file", "file_id": 999999}, "file_id"),
        ({"body": "x"}, "type"),
    ],
)
def test_bad_message_is_422(client, widget, token, body, field):
    body = assert_problem(post(client, widget, "messages", body, token), 422)
    assert field in body["errors"], body


def test_a_message_must_be_a_json_object(client, widget, token):
    assert_problem(post(client, widget, "messages", ["x"], token), 422)


def test_message_body_must_be_json(client, widget, token):
    response = client.post(
        url(widget, "messages"), "hello", content_type="text/plain", HTTP_AUTHORIZATION=f"Visitor {token}"
    )
    assert_problem(response, 415, "unsupported_media_type")


def upload(client, widget, token, name="a.png", content=b"\x89PNG\r\n\x1a\n", content_type="image/png", **extra):
    from django.core.files.uploadedfile import SimpleUploadedFile

    if token is not None:
        extra["HTTP_AUTHORIZATION"] = f"Visitor {token}"
    form = {"file": SimpleUploadedFile(name, content, content_type=content_type), **extra.pop("form", {})}
    return client.post(url(widget, "files"), form, **extra)


@pytest.fixture
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def test_upload_then_send_it_as_an_image_message(client, widget, token, contact, media_root):
    # when the visitor uploads a picture and sends it
    response = upload(client, widget, token, name="../../photo.png")
    assert response.status_code == 201, response.content
    body = response.json()
    sent = post(client, widget, "messages", {"type": "image", "file_id": body["id"]}, token)
    # then the file is stored under a random name as this contact's upload, and the message carries it
    assert {k: body[k] for k in ("name", "content_type", "size")} == {
        "name": "photo.png",
        "content_type": "image/png",
        "size": 8,
    }
    assert response["Access-Control-Allow-Origin"] == "*"
    file = File.objects.get(pk=body["id"])
    assert file.visitor_upload.contact == contact and file.widget == widget
    assert "photo" not in file.stored.name
    assert sent.status_code == 201
    assert Message.objects.get(pk=sent.json()["id"]).file == file


def test_a_staff_file_of_the_widget_cannot_be_attached(client, widget, token):
    # given a file an operator uploaded through the REST API (it may sit in a private note)
    file = make_file(widget, name="internal.pdf", content_type="application/pdf")
    # when / then
    body = assert_problem(post(client, widget, "messages", {"type": "file", "file_id": file.pk}, token), 422)
    assert "file_id" in body["errors"]
    assert not Message.objects.filter(file=file).exists()


def test_another_visitors_upload_cannot_be_attached(client, widget, token, media_root):
    other = start(client, widget)["session_token"]
    file_id = upload(client, widget, other).json()["id"]
    body = assert_problem(post(client, widget, "messages", {"type": "image", "file_id": file_id}, token), 422)
    assert "file_id" in body["errors"]


def test_file_of_another_widget_is_422(client, widget, other_widget, token):
    file = make_file(other_widget)
    body = assert_problem(post(client, widget, "messages", {"type": "file", "file_id": file.pk}, token), 422)
    assert "file_id" in body["errors"]


def test_image_message_needs_an_image_file(client, widget, token, media_root):
    file_id = upload(client, widget, token, name="a.pdf", content=b"%PDF-1.4", content_type="application/pdf").json()[
        "id"
    ]
    assert_problem(post(client, widget, "messages", {"type": "image", "file_id": file_id}, token), 422)
    assert post(client, widget, "messages", {"type": "file", "file_id": file_id}, token).status_code == 201


def test_upload_needs_a_session(client, widget, media_root):
    assert_problem(upload(client, widget, None), 401, "visitor_session_required")
    assert not File.objects.exists()


def test_upload_over_10_mb_is_413_and_stores_nothing(client, widget, token, media_root):
    from pathlib import Path

    response = upload(client, widget, token, name="big.bin", content=b"\0" * (10 * 1024 * 1024 + 1))
    assert_problem(response, 413, "body_too_large")
    assert not File.objects.exists()
    assert not any(p.is_file() for p in Path(media_root).rglob("*"))


def test_upload_refuses_json_extra_members_and_two_files(client, widget, token, media_root):
    from django.core.files.uploadedfile import SimpleUploadedFile

    assert_problem(post(client, widget, "files", {"file": "x"}, token), 415)
    assert_problem(upload(client, widget, token, form={"note": "x"}), 422)
    two = [SimpleUploadedFile("a.txt", b"a"), SimpleUploadedFile("b.txt", b"b")]
    response = client.post(url(widget, "files"), {"file": two}, HTTP_AUTHORIZATION=f"Visitor {token}")
    assert_problem(response, 422)
    no_file = client.post(url(widget, "files"), {}, HTTP_AUTHORIZATION=f"Visitor {token}")
    assert_problem(no_file, 422)
    assert not File.objects.exists()


def test_uploads_per_address_limit_is_429(client, widget, token, settings, media_root):
    settings.VISITOR_MESSAGES_PER_ADDRESS_PER_MINUTE = 2
    assert upload(client, widget, token).status_code == 201
    assert upload(client, widget, token).status_code == 201
    response = upload(client, widget, token)
    assert_problem(response, 429, "rate_limited")
    assert File.objects.count() == 2


# --- list -----------------------------------------------------------------------------------------------


def test_list_before_the_first_message_is_empty(client, widget, token):
    response = get(client, widget, "messages", token)
    assert response.status_code == 200
    assert response.json() == {"data": []}


def test_list_shows_what_the_visitor_may_see_oldest_first(client, widget, token, contact):
    mine = say(client, widget, token, "question").json()
    chat = room_of(contact)
    agent = AgentFactory(widget=widget, name="Olga")
    for visibility in ("note", "email", "internal"):
        chat_services.post_agent_message(
            widget=widget,
            chat=chat,
            agent=agent,
            data=chat_services.MessageInput(body=f"secret {visibility}", visibility=visibility),
        )
    reply = chat_services.post_agent_message(
        widget=widget, chat=chat, agent=agent, data=chat_services.MessageInput(body="answer")
    )
    data = get(client, widget, "messages", token).json()["data"]
    assert [m["id"] for m in data] == [mine["id"], reply.pk]
    assert [m["body"] for m in data] == ["question", "answer"]
    assert data[1]["author"] == {"kind": "agent", "name": "Olga"}
    assert "visibility" not in data[1]


def test_list_after_id(client, widget, token):
    ids = [say(client, widget, token, f"m{i}").json()["id"] for i in range(3)]
    data = get(client, widget, "messages", token, after_id=ids[0]).json()["data"]
    assert [m["id"] for m in data] == ids[1:]


@pytest.mark.parametrize("after_id", ["0", "000"])
def test_list_after_id_0_is_every_message(client, widget, token, after_id):
    ids = [say(client, widget, token, f"m{i}").json()["id"] for i in range(2)]
    assert [m["id"] for m in get(client, widget, "messages", token, after_id=after_id).json()["data"]] == ids


@pytest.mark.parametrize("after_id", ["999999", "9223372036854775808", "9999999999999999999", "1" * 40])
def test_list_after_an_id_past_every_message_is_empty_like_after_a_missing_one(client, widget, token, after_id):
    say(client, widget, token)
    response = get(client, widget, "messages", token, after_id=after_id)
    assert response.status_code == 200, response.content
    assert response.json() == {"data": []}


def test_list_never_shows_another_contacts_messages(client, widget, token):
    MessageFactory(chat=ChatFactory(contact=ContactFactory(widget=widget)), body="other visitor")
    say(client, widget, token, "mine")
    assert [m["body"] for m in get(client, widget, "messages", token).json()["data"]] == ["mine"]


def test_list_gives_at_most_200_per_call(client, widget, token, contact):
    say(client, widget, token)
    chat = room_of(contact)
    Message.objects.bulk_create(
        [Message(widget=widget, chat=chat, body=f"m{i}", author_kind="client") for i in range(205)]
    )
    first = get(client, widget, "messages", token).json()["data"]
    assert len(first) == 200
    rest = get(client, widget, "messages", token, after_id=first[-1]["id"]).json()["data"]
    assert len(rest) == 6


@pytest.mark.parametrize(
    "params", [{"after_id": "x"}, {"after_id": "-1"}, {"after_id": "²"}, {"after_id": "５"}, {"limit": "5"}]
)
def test_list_bad_query_is_422(client, widget, token, params):
    assert_problem(get(client, widget, "messages", token, **params), 422)


def test_list_query_count_does_not_grow_with_messages(client, widget, token, contact):
    say(client, widget, token)
    chat = room_of(contact)

    def count_queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert get(client, widget, "messages", token).status_code == 200
        return len(captured)

    one = count_queries()
    for _ in range(3):
        agent = AgentFactory(widget=widget)
        chat_services.post_agent_message(
            widget=widget, chat=chat, agent=agent, data=chat_services.MessageInput(body="hi")
        )
    for _ in range(2):
        file = make_file(widget)
        chat_services.post_client_message(
            widget=widget, contact=contact, data=chat_services.MessageInput(type="image", file_id=file.pk)
        )
    assert count_queries() == one


# --- typing ------------------------------------------------------------------------------------------------


def test_typing_is_202_and_forwarded_once_per_interval(client, widget, token):
    say(client, widget, token)
    first = post(client, widget, "typing", {"state": "start"}, token)
    assert first.status_code == 202
    assert first.json() == {"status": "accepted", "forwarded": True}
    assert post(client, widget, "typing", {"state": "start"}, token).json()["forwarded"] is False
    assert post(client, widget, "typing", {"state": "stop"}, token).json()["forwarded"] is True


def test_the_visitors_typing_never_mutes_the_operators(client, widget, token, contact):
    say(client, widget, token)
    assert post(client, widget, "typing", {"state": "start"}, token).json()["forwarded"] is True
    chat = room_of(contact)

    assert chat_services.note_typing(widget=widget, chat=chat, state="start", by="agent") is True
    assert chat_services.note_typing(widget=widget, chat=chat, state="start", by="agent") is False
    assert post(client, widget, "typing", {"state": "start"}, token).json()["forwarded"] is False


def test_typing_before_the_first_message_is_202_not_forwarded(client, widget, token):
    response = post(client, widget, "typing", {"state": "start"}, token)
    assert response.status_code == 202
    assert response.json()["forwarded"] is False


@pytest.mark.parametrize("body", [{"state": "typing"}, {}, {"state": "start", "x": 1}])
def test_bad_typing_is_422(client, widget, token, body):
    assert_problem(post(client, widget, "typing", body, token), 422)


# --- rating --------------------------------------------------------------------------------------------------


def test_rating_before_any_conversation_is_409(client, widget, token, captured_events):
    assert_problem(post(client, widget, "rating", {"value": 5}, token), 409, "no_conversation")
    assert captured_events() == []


def test_first_rating_emits_rating_created_and_a_second_does_not(client, widget, token, contact, captured_events):
    say(client, widget, token)
    chat = room_of(contact)
    agent = AgentFactory(widget=widget)
    chat_services.post_agent_message(widget=widget, chat=chat, agent=agent, data=chat_services.MessageInput(body="hi"))
    before = len(captured_events())

    first = post(client, widget, "rating", {"value": 4, "comment": "ok"}, token)
    assert first.status_code == 201
    assert first.json() == {"chat_id": chat.pk, "value": 4, "comment": "ok"}
    assert captured_events()[before:] == [
        (
            "rating.created",
            {
                "chat_client_id": contact.guid,
                "operator_id": agent.pk,
                "author_type": "USER",
                "source": "visitor",
                "button_guid": widget.button_guid,
            },
        )
    ]

    second = post(client, widget, "rating", {"value": 2}, token)
    assert second.status_code == 201
    assert len(captured_events()) == before + 1
    assert Rating.objects.get(chat=chat).value == 2


@pytest.mark.parametrize("body", [{"value": 0}, {"value": 6}, {"value": "5"}, {"value": True}, {"value": 4.5}, {}])
def test_bad_rating_is_422(client, widget, token, body):
    say(client, widget, token)
    body = assert_problem(post(client, widget, "rating", body, token), 422)
    assert "value" in body["errors"]


def test_rating_a_spam_room_is_409(client, widget, token, contact):
    say(client, widget, token)
    Chat.objects.filter(contact=contact).update(status=Chat.Status.SPAM)
    assert_problem(post(client, widget, "rating", {"value": 5}, token), 409, "chat_is_spam")


# --- offline form -------------------------------------------------------------------------------------------


def test_offline_form_emits_offline_message_created(client, widget, token, contact, captured_events):
    body = {"name": "Anna K", "email": "anna@example.com", "phone": "+79001234567", "message": "Call me back"}
    response = post(client, widget, "offline", body, token)
    assert response.status_code == 201
    chat = room_of(contact)
    message = Message.objects.get(pk=response.json()["id"])
    assert response.json()["chat_id"] == chat.pk
    assert (message.body, message.origin) == ("Call me back", "offline_form")
    events = captured_events()
    assert [t for t, _ in events] == ["chat.created", "message.created", "offline_message.created"]
    assert events[-1][1] == {
        "chat_id": chat.pk,
        "client_id": contact.guid,
        "message_id": message.pk,
        "name": "Anna K",
        "email": "anna@example.com",
        "phone": "+79001234567",
        "button_guid": widget.button_guid,
    }
    contact.refresh_from_db()
    assert (contact.name, contact.email) == ("Anna K", "anna@example.com")


@pytest.mark.parametrize("body", [{}, {"message": "  "}, {"message": "x", "email": "nope"}, {"message": "x", "x": 1}])
def test_bad_offline_form_is_422(client, widget, token, body):
    assert_problem(post(client, widget, "offline", body, token), 422)


# --- rate limits -------------------------------------------------------------------------------------------


def test_sessions_per_address_limit_is_429_with_retry_after(client, widget, settings):
    settings.VISITOR_SESSIONS_PER_ADDRESS_PER_HOUR = 2
    start(client, widget)
    start(client, widget)
    response = post(client, widget, "sessions")
    assert_problem(response, 429, "rate_limited")
    assert int(response["Retry-After"]) >= 1
    assert response["Access-Control-Allow-Origin"] == "*"
    # another address has its own budget
    assert post(client, widget, "sessions", REMOTE_ADDR="203.0.113.9").status_code == 201


def test_messages_per_address_limit_is_429_with_retry_after(client, widget, token, settings):
    settings.VISITOR_MESSAGES_PER_ADDRESS_PER_MINUTE = 2
    assert say(client, widget, token).status_code == 201
    assert post(client, widget, "offline", {"message": "x"}, token).status_code == 201
    response = say(client, widget, token)
    assert_problem(response, 429, "rate_limited")
    assert int(response["Retry-After"]) >= 1
    assert Message.objects.filter(widget=widget).count() == 2


def test_limit_setting_is_read_at_call_time(client, widget, token, settings):
    settings.VISITOR_MESSAGES_PER_ADDRESS_PER_MINUTE = 1
    say(client, widget, token)
    assert say(client, widget, token).status_code == 429
    settings.VISITOR_MESSAGES_PER_ADDRESS_PER_MINUTE = 5
    assert say(client, widget, token).status_code == 201


def test_zero_turns_the_per_address_limits_off(client, widget, settings):
    settings.VISITOR_SESSIONS_PER_ADDRESS_PER_HOUR = 0
    settings.VISITOR_MESSAGES_PER_ADDRESS_PER_MINUTE = 0
    tokens = [start(client, widget)["session_token"] for _ in range(5)]
    for _ in range(5):
        assert say(client, widget, tokens[0]).status_code == 201
        assert post(client, widget, "typing", {"state": "stop"}, tokens[0]).status_code == 202


def test_limit_is_per_widget_and_address(client, widget, other_widget, settings):
    settings.VISITOR_SESSIONS_PER_ADDRESS_PER_HOUR = 1
    start(client, widget)
    assert post(client, widget, "sessions").status_code == 429
    assert post(client, other_widget, "sessions").status_code == 201


def test_the_per_widget_budget_scales_with_the_setting_and_0_turns_it_off(client, widget, token, monkeypatch, settings):
    # given a per-widget message budget of 1 scaled by 2
    monkeypatch.setitem(
        auth.LIMITS,
        "messages",
        auth.Limit("visitor_messages", "VISITOR_MESSAGES_PER_ADDRESS_PER_MINUTE", 1, 60, per_widget=1),
    )
    settings.VISITOR_WIDGET_BUDGET_SCALE = 2
    # then two messages from two addresses pass and the third is refused
    assert say(client, widget, token).status_code == 201
    assert (
        post(client, widget, "messages", {"type": "text", "body": "x"}, token, REMOTE_ADDR="198.51.100.7").status_code
        == 201
    )
    assert_problem(
        post(client, widget, "messages", {"type": "text", "body": "y"}, token, REMOTE_ADDR="198.51.100.8"), 429
    )
    # and with 0 the per-widget budget is off
    settings.VISITOR_WIDGET_BUDGET_SCALE = 0
    assert (
        post(client, widget, "messages", {"type": "text", "body": "z"}, token, REMOTE_ADDR="198.51.100.9").status_code
        == 201
    )


def test_per_widget_budget_applies_whatever_the_address(client, widget, token, monkeypatch):
    monkeypatch.setitem(
        auth.LIMITS,
        "messages",
        auth.Limit("visitor_messages", "VISITOR_MESSAGES_PER_ADDRESS_PER_MINUTE", 1, 60, per_widget=1),
    )
    assert say(client, widget, token).status_code == 201
    response = post(client, widget, "messages", {"type": "text", "body": "x"}, token, REMOTE_ADDR="198.51.100.7")
    assert_problem(response, 429)


# --- CORS -----------------------------------------------------------------------------------------------------


def test_preflight_is_answered_without_a_session(client, widget):
    response = client.options(
        url(widget, "messages"),
        HTTP_ORIGIN="https://shop.example",
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST",
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="authorization, content-type",
    )
    assert response.status_code == 204
    assert response["Access-Control-Allow-Origin"] == "*"
    assert "Authorization" in response["Access-Control-Allow-Headers"]
    assert "POST" in response["Access-Control-Allow-Methods"]


def test_unknown_method_is_405(client, widget, token):
    response = client.delete(url(widget, "messages"), HTTP_AUTHORIZATION=f"Visitor {token}")
    assert_problem(response, 405)


# --- config: the header's operators ------------------------------------------------------------------


@pytest.fixture
def live(monkeypatch):
    """The agents whose console socket is live (the presence store), set per test."""
    from apps.agents import selectors as agent_selectors

    connected: set[int] = set()
    monkeypatch.setattr(agent_selectors, "PRESENCE_SOURCE", lambda widget: set(connected))
    return connected


@pytest.fixture
def crew(widget, live, provide_port):
    """Header-visible operators in every presence, plus three the header never shows."""
    from apps.core import ports
    from apps.widget.cache import purge_widget_cache

    olga = AgentFactory(widget=widget, name="Olga", email="olga@example.com")
    pavel = AgentFactory(widget=widget, name="Pavel", status=Agent.Status.RELAXATION)
    AgentFactory(widget=widget, name="Ivan")  # active, but no console open
    bot = AgentFactory(widget=widget, name="Robo", type=Agent.Type.AI)
    AgentFactory(widget=widget, name="Shy", show_in_header=False)
    AgentFactory(widget=widget, name="Gone", status=Agent.Status.BANNED)
    AgentFactory(widget=widget, name="Hook", type=Agent.Type.WEBHOOK)
    live.update({olga.pk, pavel.pk})
    # the built-in AI answers (its own tests: test_the_answering_ai_...), so Robo is online
    provide_port(ports.MACHINE_ANSWERER, lambda w: True, key="ai")
    purge_widget_cache(widget_id=widget.pk)  # factories write behind the services' back
    return {"olga": olga, "pavel": pavel, "bot": bot}


def set_display_mode(widget, mode: str) -> None:
    from apps.widget import services as widget_services

    widget_services.update_settings(widget=widget, body={"operators_display_mode": mode})


def operators(client, widget) -> list[dict]:
    response = get(client, widget, "config")
    assert response.status_code == 200, response.content
    return response.json()["operators"]


def test_config_lists_header_operators_with_live_presence_and_nothing_private(client, widget, crew):
    set_display_mode(widget, "all")
    listed = operators(client, widget)
    assert [(o["name"], o["kind"], o["presence"]) for o in listed] == [
        ("Olga", "human", "online"),
        ("Robo", "ai", "online"),
        ("Pavel", "human", "away"),
        ("Ivan", "human", "offline"),
    ]
    assert all(set(o) == {"name", "avatar_url", "kind", "presence"} for o in listed)
    assert "olga@example.com" not in get(client, widget, "config").content.decode()


@pytest.mark.parametrize(
    ("mode", "names"),
    [("online", ["Olga", "Robo"]), ("single", ["Olga"]), ("hidden", []), ("all", ["Olga", "Robo", "Pavel", "Ivan"])],
)
def test_config_operators_follow_the_display_mode(client, widget, crew, mode, names):
    set_display_mode(widget, mode)
    assert [o["name"] for o in operators(client, widget)] == names


def test_the_default_mode_lists_online_operators(client, widget, crew):
    assert [o["name"] for o in operators(client, widget)] == ["Olga", "Robo"]


def test_single_falls_back_to_an_away_operator_when_nobody_is_online(client, widget, crew, live):
    set_display_mode(widget, "single")
    live.clear()
    crew["bot"].status = Agent.Status.RELAXATION
    crew["bot"].save(update_fields=["status"])
    from apps.widget.cache import purge_widget_cache

    purge_widget_cache(widget_id=widget.pk)
    # (Pavel chose away, but with no console open he is offline; the paused AI operator is away)
    assert [(o["name"], o["presence"]) for o in operators(client, widget)] == [("Robo", "away")]


def test_presence_is_live_while_the_roster_stays_cached(client, widget, crew, live):
    # Given a warm config cache
    set_display_mode(widget, "all")
    assert operators(client, widget)[0]["presence"] == "online"
    # When Olga's console closes and Ivan's opens (no write, no purge)
    live.discard(crew["olga"].pk)
    live.add(AgentFactory._meta.model.objects.get(widget=widget, name="Ivan").pk)
    # Then the next read shows it at once
    assert {o["name"]: o["presence"] for o in operators(client, widget)} == {
        "Olga": "offline",
        "Ivan": "online",
        "Robo": "online",
        "Pavel": "away",
    }


def test_a_cached_config_costs_the_same_queries_whatever_the_number_of_operators(client, widget, crew):
    from apps.widget.cache import purge_widget_cache

    set_display_mode(widget, "all")
    operators(client, widget)  # warm
    with CaptureQueriesContext(connection) as few:
        assert len(operators(client, widget)) == 4
    for n in range(15):
        AgentFactory(widget=widget, name=f"Extra {n}")
    purge_widget_cache(widget_id=widget.pk)
    operators(client, widget)  # rebuilt once
    with CaptureQueriesContext(connection) as many:
        listed = operators(client, widget)
    assert len(listed) == 10  # at most ten
    # the same queries (widget lookup, rate budget); the roster and who may answer come from the
    # cache and presence from its store, so `online` and the operators cost no agent query
    assert len(many.captured_queries) == len(few.captured_queries)
    agent_queries = [q["sql"] for q in many.captured_queries if '"agents_agent"' in q["sql"]]
    assert agent_queries == []


def test_operator_changes_through_the_services_reach_the_cached_roster(client, widget, crew):
    from apps.agents import services as agent_services

    set_display_mode(widget, "all")
    assert "Nina" not in [o["name"] for o in operators(client, widget)]
    nina = agent_services.create_human_agent(widget=widget, email="nina@example.com", name="Nina")
    assert "Nina" in [o["name"] for o in operators(client, widget)]
    agent_services.set_show_in_header(widget=widget, agent=nina, show_in_header=False)
    assert "Nina" not in [o["name"] for o in operators(client, widget)]
    agent_services.suspend_agent(widget=widget, agent=crew["olga"])
    assert "Olga" not in [o["name"] for o in operators(client, widget)]


def test_an_operator_avatar_is_an_absolute_url(client, widget, crew):
    from apps.agents import services as agent_services

    set_display_mode(widget, "single")
    agent_services.set_agent_avatar(widget=widget, agent=crew["olga"], content=b"\x89PNG\r\n", extension="png")
    avatar = operators(client, widget)[0]["avatar_url"]
    assert avatar.startswith("http://testserver/") and avatar.endswith(".png")


def test_another_widgets_operators_never_show(client, widget, other_widget, crew):
    AgentFactory(widget=other_widget, name="Stranger")
    set_display_mode(widget, "all")
    assert "Stranger" not in [o["name"] for o in operators(client, widget)]


def test_the_visitors_own_messages_carry_the_name_the_session_gave(client, widget, token):
    # given a session that named the visitor "Anna", who writes twice
    assert say(client, widget, token, "Hello").status_code == 201
    assert say(client, widget, token, "Anyone?").status_code == 201

    # when the visitor reads the conversation
    with CaptureQueriesContext(connection) as queries:
        response = get(client, widget, "messages", token)

    # then each of their messages is authored by that name, read in the same query as the messages
    authors = [m["author"] for m in response.json()["data"] if m["author"]["kind"] == "client"]
    assert authors == [{"kind": "client", "name": "Anna"}] * 2
    assert sum("chats_message" in q["sql"] for q in queries.captured_queries) == 1
