"""GET /v1/ai/credentials/{id}/models: a live call, 20 per hour per widget."""

import pytest

from apps.ai.tests.factories import CredentialFactory
from tests.llm_fake import server_error, unauthorized
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db


@pytest.fixture
def cred(widget, llm_fake):
    fake = llm_fake("openai")
    return fake, CredentialFactory(widget=widget, api_key=fake.api_key, base_url=fake.base_url)


def test_lists_the_providers_models(client, cred):
    fake, credential = cred
    r = client.get(f"/api/v1/ai/credentials/{credential.pk}/models")
    assert r.status_code == 200, r.content
    data = r.json()["data"]
    assert [m["id"] for m in data] == fake.models
    assert all(set(m) == {"id", "label", "is_recommended"} for m in data)
    assert fake.api_requests[-1].header("authorization") == f"Bearer {fake.api_key}"
    assert fake.api_key.encode() not in r.content


def test_the_credentials_model_is_recommended(client, cred):
    fake, credential = cred
    credential.model = fake.models[1]
    credential.save()
    data = client.get(f"/api/v1/ai/credentials/{credential.pk}/models").json()["data"]
    assert [m["id"] for m in data if m["is_recommended"]] == [fake.models[1]]


def test_anthropic_models(client, widget, llm_fake):
    fake = llm_fake("anthropic")
    credential = CredentialFactory(widget=widget, provider="anthropic", api_key=fake.api_key, base_url=fake.base_url)
    data = client.get(f"/api/v1/ai/credentials/{credential.pk}/models").json()["data"]
    assert [m["id"] for m in data] == fake.models


def test_twenty_per_hour(client, cred):
    _, credential = cred
    for _ in range(20):
        assert client.get(f"/api/v1/ai/credentials/{credential.pk}/models").status_code == 200
    r = client.get(f"/api/v1/ai/credentials/{credential.pk}/models")
    assert_problem(r, 429)
    assert "Retry-After" in r


def test_provider_failure_is_502(client, cred):
    fake, credential = cred
    fake.script(server_error(503), server_error(503), server_error(503))
    assert_problem(client.get(f"/api/v1/ai/credentials/{credential.pk}/models"), 502, "provider_failure")
    fake.script(unauthorized())
    assert_problem(client.get(f"/api/v1/ai/credentials/{credential.pk}/models"), 502, "provider_failure")


def test_retired_credential_query_and_body_are_422(client, cred):
    _, credential = cred
    assert_problem(client.get(f"/api/v1/ai/credentials/{credential.pk}/models?x=1"), 422)
    credential.is_active = False
    credential.save()
    assert_problem(client.get(f"/api/v1/ai/credentials/{credential.pk}/models"), 422, "credential_inactive")


def test_models_scope(api, cred):
    _, credential = cred
    assert_problem(api(["ai:credentials:write"]).get(f"/api/v1/ai/credentials/{credential.pk}/models"), 403)


def test_an_empty_json_object_is_no_body(client, cred):
    fake, credential = cred
    r = client.generic("GET", f"/api/v1/ai/credentials/{credential.pk}/models", "{}", content_type="application/json")
    assert r.status_code == 200, r.content
    assert [m["id"] for m in r.json()["data"]] == fake.models
    refused = client.generic(
        "GET", f"/api/v1/ai/credentials/{credential.pk}/models", '{"a": 1}', content_type="application/json"
    )
    assert_problem(refused, 422)
