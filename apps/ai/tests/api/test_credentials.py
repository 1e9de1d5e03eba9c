"""Provider credentials: write-only secrets, address policy at save time, backup chains, rotation,
retirement and resolution."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.ai import selectors
from apps.ai.models import Credential
from apps.ai.tests.conftest import idem
from apps.ai.tests.factories import AiOperatorFactory, AssistantFactory, CredentialFactory
from apps.core.crypto import decrypt_secret
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db
BASE = "/api/v1/ai/credentials"


def create(client, **body):
    body = {"provider": "openai", "api_key": "sk-secret-123", **body}
    return client.post(BASE, body, format="json", **idem())


def test_create_stores_the_key_encrypted_and_never_returns_it(client, widget):
    r = create(client, signing_secret="sig-secret-456", model="gpt-x")
    assert r.status_code == 201, r.content
    body = r.json()
    assert b"sk-secret-123" not in r.content and b"sig-secret-456" not in r.content
    assert body["has_api_key"] is True and body["has_signing_secret"] is True
    assert body["scope"] == "widget" and body["backup_chain"] == [] and body["is_active"] is True
    row = Credential.objects.get(pk=body["id"])
    assert "sk-secret-123" not in row.api_key_encrypted
    assert decrypt_secret(row.api_key_encrypted) == "sk-secret-123"
    listed = client.get(BASE)
    assert b"sk-secret-123" not in listed.content and listed.json()["data"][0]["id"] == body["id"]


@pytest.mark.parametrize(
    "body,field",
    [
        ({"provider": "litellm"}, "provider"),
        ({"api_key": ""}, "api_key"),
        ({"api_key": None}, "api_key"),
        ({"api_key": " padded "}, "api_key"),
        ({"base_url": "http://llm.example.com/v1"}, "base_url"),
        ({"base_url": "https://user:pw@llm.example.com/v1"}, "base_url"),
        ({"base_url": "https://private.test/v1"}, "base_url"),
        ({"base_url": "https://loop.test/v1"}, "base_url"),
        ({"base_url": "https://169.254.169.254/v1"}, "base_url"),
        ({"provider": "openai_compatible"}, "base_url"),
        ({"is_active": "yes"}, "is_active"),
        ({"assistant_id": 999999}, "assistant_id"),
        ({"backup_credential_id": 999999}, "backup_credential_id"),
        ({"has_api_key": True}, "has_api_key"),
    ],
)
def test_create_refuses_bad_input(client, widget, body, field):
    problem = assert_problem(create(client, **body), 422)
    assert field in problem["errors"], problem
    assert not Credential.objects.exists()


def test_loopback_base_url_only_with_the_switch(client, settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    r = create(client, provider="openai_compatible", base_url="https://loop.test:8443/v1/")
    assert r.status_code == 201, r.content
    assert r.json()["base_url"] == "https://loop.test:8443/v1"


def test_foreign_ids_in_the_body_are_422(client, other_widget):
    foreign_assistant = AssistantFactory(widget=other_widget)
    foreign_cred = CredentialFactory(widget=other_widget)
    foreign_op = AiOperatorFactory(assistant=foreign_assistant)
    for body in (
        {"assistant_id": foreign_assistant.pk},
        {"backup_credential_id": foreign_cred.pk},
        {"operator_id": foreign_op.pk},
    ):
        assert_problem(create(client, **body), 422)


def test_one_active_widget_wide_credential_per_driver(client, widget):
    first = create(client).json()
    assert_problem(create(client), 409, "credential_conflict")
    assert create(client, provider="anthropic").status_code == 201
    assert create(client, is_active=False).status_code == 201
    a = AssistantFactory(widget=widget)
    assert create(client, assistant_id=a.pk).status_code == 201
    r = client.patch(f"{BASE}/{first['id']}", {"is_active": False}, format="json", **idem())
    assert r.status_code == 200 and r.json()["is_active"] is False
    assert create(client).status_code == 201


def test_rotate_retire_and_provider_immutable(client, widget):
    cred = create(client).json()
    r = client.patch(f"{BASE}/{cred['id']}", {"api_key": "sk-new-789"}, format="json", **idem())
    assert r.status_code == 200 and b"sk-new-789" not in r.content
    assert decrypt_secret(Credential.objects.get(pk=cred["id"]).api_key_encrypted) == "sk-new-789"
    problem = assert_problem(
        client.patch(f"{BASE}/{cred['id']}", {"provider": "anthropic"}, format="json", **idem()), 422
    )
    assert "provider" in problem["errors"]
    assert Credential.objects.get(pk=cred["id"]).provider == "openai"


def test_backup_chain_resolved_in_reads_and_cycles_refused(client, widget):
    c = create(client, provider="gigachat").json()
    b = create(client, provider="anthropic", backup_credential_id=c["id"]).json()
    a = create(client, backup_credential_id=b["id"]).json()
    assert [x["id"] for x in a["backup_chain"]] == [b["id"], c["id"]]
    assert a["backup_chain"][0] == {"id": b["id"], "provider": "anthropic", "model": None, "is_active": True}
    problem = assert_problem(
        client.patch(f"{BASE}/{c['id']}", {"backup_credential_id": a["id"]}, format="json", **idem()), 422
    )
    assert "backup_credential_id" in problem["errors"]
    assert_problem(client.patch(f"{BASE}/{c['id']}", {"backup_credential_id": c["id"]}, format="json", **idem()), 422)
    assert Credential.objects.get(pk=c["id"]).backup_credential_id is None


def test_list_without_n_plus_one(client, widget):
    prev = None
    for provider in ("openai", "anthropic", "gigachat"):
        prev = CredentialFactory(widget=widget, provider=provider, backup_credential=prev)
    with CaptureQueriesContext(connection) as ctx:
        client.get(BASE)
    before = len(ctx.captured_queries)
    for _ in range(6):
        prev = CredentialFactory(widget=widget, provider="openai", is_active=False, backup_credential=prev)
    with CaptureQueriesContext(connection) as ctx:
        assert len(client.get(BASE).json()["data"]) == 9
    assert len(ctx.captured_queries) <= before


def test_foreign_credential_is_404(client, other_widget):
    foreign = CredentialFactory(widget=other_widget)
    assert_problem(client.patch(f"{BASE}/{foreign.pk}", {"is_active": False}, format="json", **idem()), 404)
    assert_problem(client.get(f"{BASE}/{foreign.pk}/models"), 404)


def test_credential_scopes(api):
    from apps.ai.tests.conftest import AI_SETUP

    assert_problem(api(AI_SETUP).post(BASE, {"provider": "openai", "api_key": "k"}, format="json", **idem()), 403)
    assert_problem(api(["ai:credentials:write"]).get(BASE), 403)


def test_credential_idempotency_and_media_type(client):
    key = idem()
    body = {"provider": "openai", "api_key": "k"}
    assert client.post(BASE, body, format="json", **key).status_code == 201
    assert_problem(client.post(BASE, {**body, "provider": "anthropic"}, format="json", **key), 409)
    assert_problem(client.post(BASE, json.dumps(body), content_type="text/plain", **idem()), 415)


# --- resolution --------------------------------------------------------------------------------------------


def test_resolution_operator_then_assistant_then_widget_by_provider_then_newest(widget):
    a = AssistantFactory(widget=widget, provider="anthropic", model="claude-y")
    op = AiOperatorFactory(assistant=a)
    newest_any = CredentialFactory(widget=widget, provider="openai")
    assert selectors.resolve_credential(widget, operator=op, assistant=a) == newest_any
    by_provider = CredentialFactory(widget=widget, provider="anthropic")
    newest_any2 = CredentialFactory(widget=widget, provider="gigachat")
    assert selectors.resolve_credential(widget, operator=op, assistant=a) == by_provider
    assert selectors.resolve_credential(widget) == newest_any2
    mine = CredentialFactory(widget=widget, provider="openai", assistant=a)
    assert selectors.resolve_credential(widget, operator=op, assistant=a) == mine
    op_cred = CredentialFactory(widget=widget, provider="gigachat", operator=op)
    assert selectors.resolve_credential(widget, operator=op, assistant=a) == op_cred
    op_cred.is_active = False
    op_cred.save()
    assert selectors.resolve_credential(widget, operator=op, assistant=a) == mine


def test_resolve_chain_gives_provider_configs_in_order_skipping_retired(widget):
    c = CredentialFactory(widget=widget, provider="gigachat", api_key="k3")
    b = CredentialFactory(widget=widget, provider="anthropic", api_key="k2", backup_credential=c, is_active=False)
    a = CredentialFactory(widget=widget, provider="openai", api_key="k1", backup_credential=b, model="gpt-q")
    chain = selectors.resolve_chain(widget)
    assert [(x.provider, x.api_key, x.credential_id) for x in chain] == [
        ("openai", "k1", a.pk),
        ("gigachat", "k3", c.pk),
    ]
    assert chain[0].model == "gpt-q"
    assert "k1" not in repr(chain[0])


def test_nothing_resolves_without_an_active_credential(widget):
    CredentialFactory(widget=widget, is_active=False)
    assert selectors.resolve_chain(widget) == []


def test_reads_name_the_endpoint_the_calls_go_to(client, settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    vendor = create(client).json()
    assert vendor["endpoint"] == "https://api.openai.com/v1" and vendor["base_url"] is None
    own = create(client, provider="openai_compatible", base_url="https://127.0.0.1:9/v1/", model="llama").json()
    assert own["endpoint"] == "https://127.0.0.1:9/v1"
    listed = {row["id"]: row["endpoint"] for row in client.get(BASE).json()["data"]}
    assert listed == {vendor["id"]: "https://api.openai.com/v1", own["id"]: "https://127.0.0.1:9/v1"}


def test_a_new_base_url_takes_the_key_again_so_a_writer_cannot_redirect_the_stored_key(client, widget, settings):
    # Given a credential whose key the writer never sees
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    cred = create(client, provider="openai_compatible", base_url="https://loop.test:8443/v1").json()
    url = f"{BASE}/{cred['id']}"

    # When a PATCH points it at another address without the key
    r = client.patch(url, {"base_url": "https://loop.test:9443/v1"}, format="json", **idem())

    # Then it is refused at api_key and nothing changed
    problem = assert_problem(r, 422)
    assert list(problem["errors"]) == ["api_key"]
    row = Credential.objects.get(pk=cred["id"])
    assert row.base_url == "https://loop.test:8443/v1" and decrypt_secret(row.api_key_encrypted) == "sk-secret-123"

    # And the same address, or a new one with the key, is taken
    same = client.patch(url, {"base_url": "https://loop.test:8443/v1/", "model": "m2"}, format="json", **idem())
    assert same.status_code == 200, same.content
    moved = client.patch(
        url, {"base_url": "https://loop.test:9443/v1", "api_key": "sk-for-9443"}, format="json", **idem()
    )
    assert moved.status_code == 200 and moved.json()["base_url"] == "https://loop.test:9443/v1"
    row.refresh_from_db()
    assert decrypt_secret(row.api_key_encrypted) == "sk-for-9443"
