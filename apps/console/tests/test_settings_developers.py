"""The owner's developers pages: the API switch, tokens issued with scopes and an expiry (the
plaintext shown exactly once), revoked in one click; webhook subscriptions written through the API's
serializers and services (the same refusals), their delivery log and redelivery; audit rows name the
owner; another widget's ids are 404."""

from __future__ import annotations

import re
import uuid

import pytest
from django.utils import timezone

from apps.audit.models import AuditEntry
from apps.core import services as core
from apps.core.auth import tokens
from apps.core.models import ApiToken, OutboxEvent
from apps.webhooks.models import Attempt, Delivery, Subscription
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

PAGE = "/console/settings/developers/"
HOOK = "https://127.0.0.1/hook"


@pytest.fixture(autouse=True)
def loopback(settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = True


def by_owner(owner, action: str) -> AuditEntry:
    entry = AuditEntry.objects.filter(action=action).latest("id")
    assert (entry.actor_type, entry.actor_id) == (AuditEntry.ActorType.AGENT, str(owner.pk)), entry
    return entry


def shown_token(html: str) -> str | None:
    found = re.search(r'id="new-token"[^>]*value="([^"]+)"', html)
    return found.group(1) if found else None


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": str(uuid.uuid4())}


# --- the page, the API switch ---------------------------------------------------------------------


def test_the_page_lists_tokens_and_subscriptions(owner_console, widget, other_widget):
    core.issue_token(widget=widget, scopes=["chats:read"], name="Mine")
    core.issue_token(widget=other_widget, scopes=["chats:read"], name="Theirs")
    Subscription.objects.create(widget=widget, url=HOOK, events=["message.created"], secret_encrypted="x")
    response = owner_console.get(PAGE)
    assert response.status_code == 200
    html = response.content.decode()
    assert "Mine" in html and "Theirs" not in html and HOOK in html
    assert 'value="ai-setup"' in html and 'value="all"' in html and 'value="support-agents"' in html
    assert 'name="scopes" value="privacy:write"' in html and "partners:withdraw" not in html


def test_the_api_switch_is_saved_and_audited(owner_console, owner, widget):
    widget.api_enabled = False
    widget.save()
    response = owner_console.post(f"{PAGE}api/", {"api_enabled": "on"})
    assert response.status_code == 303
    widget.refresh_from_db()
    assert widget.api_enabled is True
    assert by_owner(owner, "widget.changed").changes["api_enabled"] == {"from": False, "to": True}
    owner_console.post(f"{PAGE}api/", {})
    widget.refresh_from_db()
    assert widget.api_enabled is False


# --- tokens -----------------------------------------------------------------------------------------


def test_a_token_is_issued_shown_once_and_works(owner_console, owner, widget, client):
    widget.api_enabled = True
    widget.save()
    response = owner_console.post(
        f"{PAGE}tokens/", {"name": "CRM", "scopes": ["chats:read", "contacts:read"], "expires_in_days": "30"}
    )
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    plaintext = shown_token(response.content.decode())
    token = ApiToken.objects.get(widget=widget)
    assert plaintext and tokens.hash_token(plaintext) == token.secret_hash
    assert token.name == "CRM" and token.scopes == ["chats:read", "contacts:read"]
    assert 29 * 86400 < (token.expires_at - timezone.now()).total_seconds() <= 30 * 86400
    assert by_owner(owner, "token.issued").target_id == token.prefix
    # the API takes it
    assert client.get("/api/v1/chats", HTTP_AUTHORIZATION=f"Bearer {plaintext}").status_code == 200
    # never shown again: not on the page, not in the audit row
    again = owner_console.get(PAGE).content.decode()
    assert plaintext not in again and shown_token(again) is None and token.prefix in again
    assert plaintext not in str(AuditEntry.objects.values_list("changes", flat=True)[::1])


@pytest.mark.parametrize(
    "preset, expected",
    [("all", None), ("ai-setup", "ai-setup"), ("support-agents", "support-agents")],
)
def test_a_preset_replaces_the_ticked_scopes(owner_console, widget, preset, expected):
    from apps.core.auth import scopes as catalogue

    response = owner_console.post(f"{PAGE}tokens/", {"preset": preset, "scopes": ["chats:read"]})
    assert response.status_code == 200
    wanted = sorted(catalogue.OPERATIONAL_SCOPES) if expected is None else sorted(catalogue.PRESETS[expected])
    assert ApiToken.objects.get(widget=widget).scopes == wanted


@pytest.mark.parametrize(
    "data, message",
    [
        ({"name": "x"}, "Choose a scope set or at least one scope."),
        ({"scopes": ["nope:read"]}, "Select a valid choice. nope:read is not one of the available choices."),
        ({"scopes": ["chats:read"], "expires_in_days": "0"}, "Ensure this value is greater than or equal to 1."),
        ({"scopes": ["chats:read"], "name": "n" * 101}, "Ensure this value has at most 100 characters"),
    ],
)
def test_a_bad_token_form_is_refused_and_issues_nothing(owner_console, data, message):
    response = owner_console.post(f"{PAGE}tokens/", data)
    assert response.status_code == 422
    assert message in response.content.decode()
    assert not ApiToken.objects.exists()


def test_revoking_takes_effect_at_once_and_is_audited(owner_console, owner, widget, client):
    widget.api_enabled = True
    widget.save()
    issued = core.issue_token(widget=widget, scopes=["chats:read"])
    response = owner_console.post(f"{PAGE}tokens/{issued.token.pk}/revoke/")
    assert response.status_code == 303
    issued.token.refresh_from_db()
    assert issued.token.revoked_at is not None
    assert by_owner(owner, "token.revoked").target_id == issued.token.prefix
    assert client.get("/api/v1/chats", HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}").status_code == 401
    assert "Revoked" in owner_console.get(PAGE).content.decode()


def test_another_widgets_token_is_404(owner_console, other_widget):
    issued = core.issue_token(widget=other_widget, scopes=["chats:read"])
    assert owner_console.post(f"{PAGE}tokens/{issued.token.pk}/revoke/").status_code == 404
    assert owner_console.post(f"{PAGE}tokens/99999999999999999999/revoke/").status_code == 404
    issued.token.refresh_from_db()
    assert issued.token.revoked_at is None


# --- webhook subscriptions --------------------------------------------------------------------------


def subscribe(owner_console, **data):
    body = {"url": HOOK, "events": ["message.created"], **data}
    return owner_console.post(f"{PAGE}webhooks/", body)


def test_a_subscription_is_created_with_its_secret_shown_once(owner_console, owner, widget):
    response = subscribe(owner_console, events=["message.created", "chat.closed"])
    assert response.status_code == 200
    html = response.content.decode()
    secret = re.search(r'id="new-secret"[^>]*value="([^"]+)"', html).group(1)
    sub = Subscription.objects.get(widget=widget)
    assert sub.url == HOOK and sub.events == ["message.created", "chat.closed"] and secret.startswith("whsec_")
    assert "chat.closed" in html  # not delivered on this server yet: said so
    assert by_owner(owner, "webhook_subscription.created").target_id == str(sub.pk)
    assert secret not in owner_console.get(PAGE).content.decode()


API_REFUSALS = [
    {"url": "http://127.0.0.1/hook", "events": ["message.created"]},
    {"url": HOOK, "events": []},
    {"url": HOOK, "events": ["no.such.event", "chat.updated"]},
    {"url": HOOK, "events": ["message.created"], "secret": "short"},
    {"url": "https://user:pw@127.0.0.1/h", "events": ["chat_finished"], "is_legacy_compat": True},
]


def page_errors(html: str) -> list[str]:
    return sorted(
        re.findall(r'<p class="error">([^<]*)</p>', html)
        + re.findall(r"<div class=\"refusal\"[^>]*><p>([^<]*)</p>", html)
    )


def api_errors(body: dict) -> list[str]:
    import html as html_lib

    return sorted(html_lib.escape(m) for messages in body["errors"].values() for m in messages)


@pytest.mark.parametrize("body", API_REFUSALS)
def test_a_refused_subscription_shows_the_apis_messages(owner_console, api, body):
    answer = api(scopes=["webhooks:write"]).post("/api/v1/webhook-subscriptions", body, format="json", **idem())
    problem = assert_problem(answer, 422)
    posted = {**body, "is_legacy_compat": "on"} if body.get("is_legacy_compat") else dict(body)
    response = owner_console.post(f"{PAGE}webhooks/", posted)
    assert response.status_code == 422
    assert page_errors(response.content.decode()) == api_errors(problem)
    assert not Subscription.objects.exists()


def test_a_duplicate_url_is_409_with_the_apis_message(owner_console, api):
    assert subscribe(owner_console).status_code == 200
    answer = api(scopes=["webhooks:write"]).post(
        "/api/v1/webhook-subscriptions", {"url": HOOK, "events": ["message.created"]}, format="json", **idem()
    )
    problem = assert_problem(answer, 409, "subscription_url_exists")
    response = subscribe(owner_console)
    assert response.status_code == 409 and problem["detail"] in response.content.decode()
    assert Subscription.objects.count() == 1


@pytest.fixture
def sub(widget) -> Subscription:
    return Subscription.objects.create(widget=widget, url=HOOK, events=["message.created"], secret_encrypted="x")


def test_a_subscription_is_edited_and_audited(owner_console, owner, sub):
    response = owner_console.post(
        f"{PAGE}webhooks/{sub.pk}/edit/", {"url": "https://127.0.0.1/other", "events": ["message.created"]}
    )
    assert response.status_code == 303
    sub.refresh_from_db()
    assert sub.url == "https://127.0.0.1/other" and sub.is_active is False
    assert by_owner(owner, "webhook_subscription.changed").target_id == str(sub.pk)


def test_an_edit_refusal_is_the_apis(owner_console, api, sub):
    body = {"url": "ftp://127.0.0.1/x", "events": ["message.created"], "is_active": True, "is_legacy_compat": False}
    answer = api(scopes=["webhooks:write"]).patch(
        f"/api/v1/webhook-subscriptions/{sub.pk}", body, format="json", **idem()
    )
    problem = assert_problem(answer, 422)
    response = owner_console.post(
        f"{PAGE}webhooks/{sub.pk}/edit/", {"url": "ftp://127.0.0.1/x", "events": ["message.created"], "is_active": "on"}
    )
    assert response.status_code == 422
    assert page_errors(response.content.decode()) == api_errors(problem)
    sub.refresh_from_db()
    assert sub.url == HOOK


def test_a_subscription_is_deleted_and_audited(owner_console, owner, sub):
    assert owner_console.post(f"{PAGE}webhooks/{sub.pk}/delete/").status_code == 303
    assert not Subscription.objects.exists()
    assert by_owner(owner, "webhook_subscription.deleted").target_id == str(sub.pk)


def test_rotating_shows_the_new_secret_once(owner_console, owner, sub):
    response = owner_console.post(f"{PAGE}webhooks/{sub.pk}/rotate/")
    assert response.status_code == 200
    assert re.search(r'id="new-secret"[^>]*value="whsec_', response.content.decode())
    assert by_owner(owner, "webhook_subscription.changed").target_id == str(sub.pk)


def delivered(widget, sub, *, status=Delivery.Status.FAILED) -> Delivery:
    event = OutboxEvent.objects.create(widget=widget, type="message.created", data={})
    row = Delivery.objects.create(
        widget=widget,
        subscription=sub,
        event=event,
        event_type="message.created",
        status=status,
        body="{}",
        payload={"type": "message.created"},
        attempts=1,
    )
    Attempt.objects.create(
        delivery=row, number=1, started_at=timezone.now(), error="http_500", status_code=500, duration_ms=12
    )
    return row


def test_the_delivery_log_shows_status_reason_and_attempts(owner_console, widget, sub):
    delivered(widget, sub)
    html = owner_console.get(f"{PAGE}webhooks/{sub.pk}/").content.decode()
    assert "message.created" in html and "<code>500</code>" in html and "http_500" in html
    assert "Your server answered with an error status." in html and "Send again" in html


def test_a_delivery_is_sent_again(owner_console, widget, sub, monkeypatch):
    from apps.webhooks import delivery as engine

    monkeypatch.setattr(engine.sweep, "trigger", lambda countdown=None: None)
    original = delivered(widget, sub)
    response = owner_console.post(f"{PAGE}webhooks/{sub.pk}/redeliver/", {"delivery_id": str(original.delivery_id)})
    assert response.status_code == 303
    copy = Delivery.objects.get(redelivery_of=original)
    assert copy.status == Delivery.Status.PENDING and copy.subscription == sub


def test_a_redelivery_refusal_is_the_apis(owner_console, api, sub):
    missing = str(uuid.uuid4())
    answer = api(scopes=["webhooks:write"]).post(
        f"/api/v1/webhook-subscriptions/{sub.pk}/redeliver", {"delivery_id": missing}, format="json", **idem()
    )
    problem = assert_problem(answer, 422)
    response = owner_console.post(f"{PAGE}webhooks/{sub.pk}/redeliver/", {"delivery_id": missing})
    assert response.status_code == 422
    for message in api_errors(problem):
        assert message in response.content.decode()
    assert Delivery.objects.count() == 0


def test_another_widgets_subscription_is_404_in_every_form(owner_console, other_widget):
    theirs = Subscription.objects.create(
        widget=other_widget, url=HOOK, events=["message.created"], secret_encrypted="x"
    )
    assert owner_console.get(f"{PAGE}webhooks/{theirs.pk}/").status_code == 404
    for action in ("edit", "delete", "rotate", "redeliver"):
        response = owner_console.post(f"{PAGE}webhooks/{theirs.pk}/{action}/", {"url": "https://127.0.0.1/x"})
        assert response.status_code == 404, action
    theirs.refresh_from_db()
    assert theirs.url == HOOK
    assert not AuditEntry.objects.filter(action__startswith="webhook_subscription").exists()
