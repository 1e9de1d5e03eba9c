"""POST /v1/widget/identity-secret: a new identity secret, answered once, audited without it; the
one before it verifies 24 hours more, older ones end at once."""

import hashlib
import hmac
import json
import logging
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from apps.audit.models import AuditEntry
from apps.widget import selectors
from apps.widget.models import IdentitySecret
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

URL = "/api/v1/widget/identity-secret"


def sign(secret: str, external_id: str) -> str:
    return hmac.new(secret.encode(), external_id.encode(), hashlib.sha256).hexdigest()


def valid(widget, secret: str, external_id: str = "user-1") -> bool:
    return selectors.identity_hash_valid(widget=widget, external_id=external_id, hash=sign(secret, external_id))


def test_post_answers_a_new_secret_once(api, widget):
    response = api(scopes=["widget:write"]).post(URL)
    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == {"secret", "created_at"}
    assert body["secret"].startswith("idsec_") and len(body["secret"]) > 40
    assert response["Cache-Control"] == "no-store"
    assert valid(widget, body["secret"])
    assert body["secret"] not in IdentitySecret.objects.get(widget=widget).secret_encrypted


def test_the_rotation_is_audited_without_the_secret(api, widget, make_token):
    secret = api(scopes=["widget:write"], name="deploy bot").post(URL).json()["secret"]
    row = AuditEntry.objects.get(widget=widget, action="identity_secret.rotated")
    assert (row.actor_type, row.actor_name, row.target_type) == ("token", "deploy bot", "identity_secret")
    assert secret not in json.dumps(row.changes, default=str)
    assert secret[len("idsec_") :] not in json.dumps(row.changes, default=str)


def test_the_previous_secret_verifies_24_hours_and_an_older_one_not_at_all(api, widget):
    client = api(scopes=["widget:write"])
    first = client.post(URL).json()["secret"]
    second = client.post(URL).json()["secret"]
    assert valid(widget, first) and valid(widget, second)
    with time_machine.travel(timezone.now() + timedelta(hours=23, minutes=59)):
        assert valid(widget, first)
    with time_machine.travel(timezone.now() + timedelta(hours=24, seconds=1)):
        assert not valid(widget, first) and valid(widget, second)
    third = client.post(URL).json()["secret"]
    assert not valid(widget, first)
    assert valid(widget, second) and valid(widget, third)


def test_post_needs_widget_write(api):
    assert_problem(api(scopes=["widget:read"]).post(URL), 403, "missing_scope")


def test_post_takes_no_body(api, widget):
    assert_problem(api(scopes=["widget:write"]).post(URL, {"secret": "mine"}, format="json"), 422)
    assert not IdentitySecret.objects.exists()


def test_a_secret_verifies_only_its_own_widget(api, widget, other_widget):
    secret = api(scopes=["widget:write"]).post(URL).json()["secret"]
    assert not valid(other_widget, secret)


def test_the_secret_never_reaches_the_logs(api, widget, caplog):
    caplog.set_level(logging.DEBUG)
    secret = api(scopes=["widget:write"]).post(URL).json()["secret"]
    assert caplog.records
    for record in caplog.records:
        text = record.getMessage() + " " + json.dumps(record.__dict__, default=str)
        assert secret not in text and secret[len("idsec_") :] not in text


def test_rotating_the_encryption_key_keeps_the_secrets(api, widget, settings):
    from io import StringIO

    from cryptography.fernet import Fernet
    from django.core.management import call_command

    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.WEBHOOK_SECRET_KEYS = [old]
    client = api(scopes=["widget:write"])
    first = client.post(URL).json()["secret"]
    second = client.post(URL).json()["secret"]
    settings.WEBHOOK_SECRET_KEYS = [new, old]
    out = StringIO()
    call_command("rotate_identity_keys", stdout=out)
    assert json.loads(out.getvalue()) == {"rotated": 1}
    settings.WEBHOOK_SECRET_KEYS = [new]  # the old key dropped
    assert valid(widget, first) and valid(widget, second)
