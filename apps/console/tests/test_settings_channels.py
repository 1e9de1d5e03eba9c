"""The owner's channels page: messengers connected, checked again and disconnected through the
API's serializer and services (against a loopback fake of Telegram and VK), custom channels created
(the secret shown once), edited, switched and deleted; each with its state; the API's refusals for
the same input; audit rows name the owner; another widget's ids are 404."""

from __future__ import annotations

import html as html_lib
import re
import uuid

import pytest

from apps.audit.models import AuditEntry
from apps.billing.models import AccountPlan, Plan
from apps.channels.models import CustomChannel, MessengerConnection, VkCommunity
from apps.channels.tests.tg_fake import TelegramFake
from apps.channels.tests.vk_fake import VkFake
from apps.core import crypto
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

PAGE = "/console/settings/channels/"
TG_TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
BAD_TG_TOKEN = "987654321:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
VK_TOKEN = "vk1.a.community-token-0123456789"
GROUP = {"id": 218000001, "name": "My Shop", "screen_name": "myshop"}


@pytest.fixture(autouse=True)
def loopback(settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    settings.PUBLIC_BASE_URL = "https://chat.example.com"


@pytest.fixture
def tg(settings, monkeypatch):
    fake = TelegramFake(valid_tokens={TG_TOKEN}).start()
    settings.PROVIDER_API_BASE_TG = fake.base
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(fake.ca_path))
    yield fake
    fake.stop()


@pytest.fixture
def vk(settings, monkeypatch):
    fake = VkFake(valid_tokens={VK_TOKEN}, communities={"myshop": GROUP}).start()
    settings.PROVIDER_API_BASE_VK = fake.base
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(fake.ca_path))
    yield fake
    fake.stop()


@pytest.fixture
def paid(widget):
    plan = Plan.objects.create(slug="test-pro", name="Test Pro", is_paid=True, paid_features=["messengers"])
    AccountPlan.objects.create(account=widget.account, plan=plan)


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": str(uuid.uuid4())}


def shown_errors(html: str) -> list[str]:
    """Every message the page shows about a refused form (under a field or above the form)."""
    found = re.findall(r'<p class="error">([^<]*)</p>', html)
    for block in re.findall(r'<div class="refusal" role="alert">(.*?)</div>', html, re.S):
        found += re.findall(r"<p>([^<]*)</p>", block)
    return sorted(found)


def api_messages(problem: dict) -> list[str]:
    found = [m for messages in (problem.get("errors") or {}).values() for m in messages]
    return sorted(html_lib.escape(m) for m in (found or [problem["detail"]]))


def by_owner(owner, action: str) -> AuditEntry:
    entry = AuditEntry.objects.filter(action=action).latest("id")
    assert (entry.actor_type, entry.actor_id) == (AuditEntry.ActorType.AGENT, str(owner.pk)), entry
    return entry


# --- the page ---------------------------------------------------------------------------------------


def test_the_page_shows_every_provider_and_the_channels_with_their_state(owner_console, widget, other_widget):
    MessengerConnection.objects.create(
        widget=widget,
        provider="vb",
        hook_id="h1",
        token_encrypted=crypto.encrypt_secret("secret-viber-token"),
        webhook_status="failed",
        webhook_detail="bad certificate",
    )
    CustomChannel.objects.create(widget=widget, name="Shop app", url="https://127.0.0.1/a", secret_encrypted="x")
    CustomChannel.objects.create(
        widget=widget, name="Old app", url="https://127.0.0.1/b", secret_encrypted="x", is_active=False
    )
    CustomChannel.objects.create(widget=other_widget, name="Not mine", url="https://127.0.0.1/c", secret_encrypted="x")
    response = owner_console.get(PAGE)
    assert response.status_code == 200
    html = response.content.decode()
    for name in ("Telegram", "WhatsApp", "Viber", "Facebook Messenger", "OK.ru", "Max", "Cian", "AliExpress"):
        assert name in html
    assert "Failing" in html and "bad certificate" in html and "secret-viber-token" not in html
    assert "Shop app" in html and "Old app" in html and "Not mine" not in html
    assert 'id="wa-sid"' in html and 'id="apple-url"' in html and 'id="tg-sid"' not in html


# --- messengers -------------------------------------------------------------------------------------


def test_telegram_is_connected_checked_again_and_disconnected(owner_console, owner, widget, tg, paid):
    response = owner_console.post(f"{PAGE}messengers/tg/connect/", {"token": TG_TOKEN})
    assert response.status_code == 303
    conn = MessengerConnection.objects.get(widget=widget, provider="tg")
    assert crypto.decrypt_secret(conn.token_encrypted) == TG_TOKEN and conn.webhook_status == "registered"
    assert [c.method for c in tg.calls] == ["getMe", "setWebhook"]
    created = by_owner(owner, "messenger_connection.created")
    assert created.target_id == "tg" and created.changes["token"] == {"from": "[hidden]", "to": "[hidden]"}
    assert TG_TOKEN not in str(created.changes)
    page = owner_console.get(PAGE).content.decode()
    assert "Telegram is connected." in page and TG_TOKEN not in page
    assert owner_console.post(f"{PAGE}messengers/tg/verify/").status_code == 303
    assert tg.calls[-1].method == "setWebhook"
    assert owner_console.post(f"{PAGE}messengers/tg/disconnect/").status_code == 303
    assert not MessengerConnection.objects.filter(widget=widget, provider="tg").exists()
    assert by_owner(owner, "messenger_connection.deleted").target_id == "tg"


@pytest.mark.parametrize(
    "provider, body",
    [
        ("tg", {"token": "nope"}),
        ("tg", {}),
        ("tg", {"token": BAD_TG_TOKEN}),
        ("wa", {"token": "abc"}),
        ("apple", {"token": "abc", "sid": "x", "url": "http://127.0.0.1/gw"}),
        ("vk", {"token": TG_TOKEN}),
    ],
)
def test_a_refused_connect_shows_the_apis_messages_and_stores_nothing(owner_console, api, tg, paid, provider, body):
    answer = api(scopes=["messengers:write"]).put(f"/api/v1/messengers/{provider}", body, format="json", **idem())
    assert answer.status_code == 422, answer.content
    problem = assert_problem(answer, 422)
    response = owner_console.post(f"{PAGE}messengers/{provider}/connect/", body)
    assert response.status_code == 422
    html = response.content.decode()
    assert shown_errors(html) == api_messages(problem)
    assert TG_TOKEN not in html and BAD_TG_TOKEN not in html
    assert not MessengerConnection.objects.exists()


def test_without_a_paid_plan_the_refusal_is_the_apis(owner_console, api, tg):
    problem = assert_problem(
        api(scopes=["messengers:write"]).put("/api/v1/messengers/tg", {"token": TG_TOKEN}, format="json", **idem()),
        409,
        "plan_required",
    )
    response = owner_console.post(f"{PAGE}messengers/tg/connect/", {"token": TG_TOKEN})
    assert response.status_code == 409 and problem["detail"] in response.content.decode()
    assert tg.calls == []


def test_an_unknown_provider_is_404(owner_console):
    assert owner_console.post(f"{PAGE}messengers/nope/connect/", {"token": "x"}).status_code == 404
    assert owner_console.post(f"{PAGE}messengers/nope/disconnect/").status_code == 404


def test_a_vk_community_is_connected_made_primary_and_disconnected(owner_console, owner, widget, vk, paid):
    response = owner_console.post(f"{PAGE}vk/", {"token": VK_TOKEN, "community": "myshop"})
    assert response.status_code == 303, response.content.decode()[-2000:]
    community = VkCommunity.objects.get(widget=widget)
    assert community.is_primary and "My Shop" in owner_console.get(PAGE).content.decode()
    assert owner_console.post(f"{PAGE}vk/{community.pk}/primary/").status_code == 303
    assert owner_console.post(f"{PAGE}vk/{community.pk}/delete/").status_code == 303
    assert not VkCommunity.objects.exists()
    assert by_owner(owner, "vk_community.created").target_id == str(GROUP["id"])
    assert by_owner(owner, "vk_community.deleted").target_id == str(GROUP["id"])


def test_a_refused_vk_community_shows_the_apis_messages(owner_console, api, vk, paid):
    body = {"token": "short", "community": ""}
    problem = assert_problem(
        api(scopes=["messengers:write"]).post("/api/v1/messengers/vk/communities", body, format="json", **idem()), 422
    )
    response = owner_console.post(f"{PAGE}vk/", body)
    assert response.status_code == 422
    assert shown_errors(response.content.decode()) == api_messages(problem)


def test_another_widgets_vk_community_is_404(owner_console, other_widget):
    theirs = VkCommunity.objects.create(
        widget=other_widget, community_id=1, token_encrypted="x", secret_encrypted="", is_primary=False
    )
    for action in ("primary", "delete"):
        assert owner_console.post(f"{PAGE}vk/{theirs.pk}/{action}/").status_code == 404
    theirs.refresh_from_db()
    assert theirs.is_primary is False


# --- custom channels --------------------------------------------------------------------------------


def test_a_custom_channel_is_created_with_its_secret_shown_once(owner_console, owner, widget):
    response = owner_console.post(f"{PAGE}custom/", {"name": "Shop app", "url": "https://127.0.0.1/replies"})
    assert response.status_code == 200
    secret = re.search(r'id="channel-secret"[^>]*value="([^"]+)"', response.content.decode()).group(1)
    channel = CustomChannel.objects.get(widget=widget)
    assert crypto.decrypt_secret(channel.secret_encrypted) == secret
    assert by_owner(owner, "custom_channel.created").target_id == str(channel.pk)
    assert secret not in owner_console.get(PAGE).content.decode()


@pytest.mark.parametrize(
    "body",
    [
        {"name": "x", "url": "http://127.0.0.1/h"},
        {"name": "", "url": "https://127.0.0.1/h"},
        {"name": "x", "url": "https://user:pw@127.0.0.1/h"},
        {"url": "https://127.0.0.1/h"},
    ],
)
def test_a_refused_custom_channel_shows_the_apis_messages(owner_console, api, body):
    problem = assert_problem(
        api(scopes=["channels:register"]).post("/api/v1/channels", body, format="json", **idem()), 422
    )
    response = owner_console.post(f"{PAGE}custom/", body)
    assert response.status_code == 422
    assert shown_errors(response.content.decode()) == api_messages(problem)
    assert not CustomChannel.objects.exists()


@pytest.fixture
def channel(widget) -> CustomChannel:
    return CustomChannel.objects.create(
        widget=widget, name="App", url="https://127.0.0.1/hook", secret_encrypted=crypto.encrypt_secret("s" * 32)
    )


def test_a_custom_channel_is_edited_switched_and_deleted_audited(owner_console, owner, channel):
    assert owner_console.get(f"{PAGE}custom/{channel.pk}/").status_code == 200
    response = owner_console.post(f"{PAGE}custom/{channel.pk}/edit/", {"name": "Shop", "url": "https://127.0.0.1/v2"})
    assert response.status_code == 303
    channel.refresh_from_db()
    assert (channel.name, channel.url) == ("Shop", "https://127.0.0.1/v2")
    assert by_owner(owner, "custom_channel.changed").target_id == str(channel.pk)
    assert owner_console.post(f"{PAGE}custom/{channel.pk}/switch/", {}).status_code == 303
    channel.refresh_from_db()
    assert channel.is_active is False
    assert "Off" in owner_console.get(PAGE).content.decode()
    assert owner_console.post(f"{PAGE}custom/{channel.pk}/switch/", {"is_active": "on"}).status_code == 303
    channel.refresh_from_db()
    assert channel.is_active is True
    assert owner_console.post(f"{PAGE}custom/{channel.pk}/delete/").status_code == 303
    assert not CustomChannel.objects.exists()
    assert by_owner(owner, "custom_channel.deleted").target_id == str(channel.pk)


def test_an_edit_refusal_is_the_apis_and_changes_nothing(owner_console, api, channel):
    body = {"name": "Shop", "url": "http://127.0.0.1/v2"}
    problem = assert_problem(
        api(scopes=["channels:register"]).post("/api/v1/channels", body, format="json", **idem()), 422
    )
    response = owner_console.post(f"{PAGE}custom/{channel.pk}/edit/", body)
    assert response.status_code == 422
    assert shown_errors(response.content.decode()) == api_messages(problem)
    channel.refresh_from_db()
    assert channel.name == "App"


def test_another_widgets_custom_channel_is_404_in_every_form(owner_console, other_widget):
    theirs = CustomChannel.objects.create(
        widget=other_widget, name="T", url="https://127.0.0.1/t", secret_encrypted="x"
    )
    assert owner_console.get(f"{PAGE}custom/{theirs.pk}/").status_code == 404
    for action in ("edit", "switch", "delete"):
        response = owner_console.post(
            f"{PAGE}custom/{theirs.pk}/{action}/", {"name": "x", "url": "https://127.0.0.1/x"}
        )
        assert response.status_code == 404, action
    theirs.refresh_from_db()
    assert theirs.is_active and theirs.name == "T"
