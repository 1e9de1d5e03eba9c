"""Single sign-on against a real OpenID Connect provider on loopback (django-oauth-toolkit in its own
process, tests/oidc_provider): the console's whole flow over HTTPS, the browser's part played by a
requests session at the provider's login form and by the Django test client at the console."""

from __future__ import annotations

import base64
import hashlib
import socket
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.test import Client
from django.urls import reverse
from django_otp.plugins.otp_totp.models import TOTPDevice

from apps.agents.models import Agent
from apps.agents.tests.factories import HumanAgentFactory
from apps.audit.models import AuditEntry
from apps.console import signin, sso
from apps.console.tests.conftest import PASSWORD
from tests.oidc_provider import process

pytestmark = pytest.mark.django_db

CALLBACK = "http://testserver/console/sso/callback/"
PEOPLE = {
    # the e-mail in another case than the console's: matched case-insensitively
    "anna": {"email": "ANNA@Example.com", "email_verified": True},
    "victor": {"email": "victor@example.com", "email_verified": False},
    "stranger": {"email": "stranger@example.com", "email_verified": True},
    "banned": {"email": "bert@example.com", "email_verified": True},
    # Microsoft Entra ID's spelling of a verified address
    "erin": {"email": "erin@example.com", "xms_edov": True},
    "nobody-vouches": {"email": "nora@example.com"},
}


@pytest.fixture(scope="module")
def provider(tmp_path_factory):
    with process.running(tmp_path_factory.mktemp("oidc"), people=PEOPLE, redirect_uri=CALLBACK) as running:
        yield running


@pytest.fixture
def configured(provider, settings, monkeypatch):
    settings.OIDC_ISSUER = provider.issuer
    settings.OIDC_CLIENT_ID = provider.client_id
    settings.OIDC_CLIENT_SECRET = provider.client_secret
    settings.OIDC_PROVIDER_NAME = "Example ID"
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", provider.ca_path)
    return provider


@pytest.fixture
def anna(widget):
    return HumanAgentFactory(widget=widget, name="Anna", email="anna@example.com")


@pytest.fixture
def victor(widget):
    return HumanAgentFactory(widget=widget, name="Victor", email="victor@example.com")


@pytest.fixture
def refusals(monkeypatch):
    """signin.first_factor_failed's calls, the real function still run."""
    calls = []
    real = signin.first_factor_failed

    def spy(request, **kwargs):
        calls.append(kwargs)
        return real(request, **kwargs)

    monkeypatch.setattr(signin, "first_factor_failed", spy)
    return calls


def start(client: Client, next_url: str = "/console/reports/") -> str:
    answer = client.get("/console/sso/start/", {"next": next_url})
    assert answer.status_code == 302
    return answer["Location"]


def with_query(url: str, **changes: str) -> str:
    parts = urlsplit(url)
    query = {key: values[0] for key, values in parse_qs(parts.query).items()}
    query.update(changes)
    return urlunsplit(parts._replace(query=urlencode(query)))


def callback_path(url: str) -> str:
    assert url.startswith(CALLBACK), url
    return url.removeprefix("http://testserver")


def closed_port() -> int:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        return closed.getsockname()[1]


def signed_in_user_id(client: Client):
    return client.session.get("_auth_user_id")


def test_a_verified_email_of_an_operator_signs_in_and_lands_on_next(configured, anna, refusals):
    client = Client()
    users = get_user_model().objects.count()

    back = process.browse(configured, start(client), "anna")
    answer = client.get(callback_path(back))

    assert answer.status_code == 302
    assert answer["Location"] == "/console/reports/"
    assert signed_in_user_id(client) == str(anna.user.pk)
    assert client.get("/console/").status_code == 200
    assert get_user_model().objects.count() == users
    assert refusals == []
    row = AuditEntry.objects.get(action="auth.signed_in", target_id=str(anna.pk))
    assert row.changes["method"]["to"] == "oidc"


def test_an_operator_with_an_authenticator_gets_the_code_step_after_the_provider(configured, anna):
    TOTPDevice.objects.create(user=anna.user, name="phone", confirmed=True)
    client = Client()

    back = process.browse(configured, start(client), "anna")
    answer = client.get(callback_path(back))

    assert answer.status_code == 302
    assert answer["Location"] == reverse("console:login-code")
    assert signed_in_user_id(client) is None


def test_the_authorization_request_carries_pkce_s256_state_and_nonce(configured, anna):
    client = Client()

    authorize = start(client)

    query = parse_qs(urlsplit(authorize).query)
    assert authorize.startswith(configured.issuer + "/authorize/")
    assert query["code_challenge_method"] == ["S256"]
    state = query["state"][0]
    stored = client.session["oidc_states"][state]
    assert stored["nonce"] == query["nonce"][0]
    digest = hashlib.sha256(stored["code_verifier"].encode()).digest()
    assert query["code_challenge"] == [base64.urlsafe_b64encode(digest).rstrip(b"=").decode()]
    assert query["scope"] == ["openid email"]
    assert query["redirect_uri"] == [CALLBACK]


def test_the_provider_checks_the_pkce_verifier(configured, anna, refusals, caplog):
    client = Client()
    authorize = start(client)
    challenge = parse_qs(urlsplit(authorize).query)["code_challenge"][0]
    # Someone else's challenge (an intercepted code is useless without its verifier)
    forged = base64.urlsafe_b64encode(hashlib.sha256(b"not the verifier").digest()).rstrip(b"=").decode()

    back = process.browse(configured, with_query(authorize, code_challenge=forged), "anna")
    answer = client.get(callback_path(back))

    assert answer.status_code == 401
    assert "did not confirm who you are" in answer.content.decode()
    assert signed_in_user_id(client) is None
    assert refusals[-1]["reason"] == "provider_refused"
    assert "the provider refused the code: 400" in caplog.text
    assert (challenge, "S256") not in configured.grants()
    assert (forged, "S256") in configured.grants()


def test_an_unverified_email_is_refused(configured, victor, refusals):
    client = Client()

    back = process.browse(configured, start(client), "victor")
    answer = client.get(callback_path(back))

    assert answer.status_code == 403
    assert "has not verified your e-mail address" in answer.content.decode()
    assert signed_in_user_id(client) is None
    assert refusals == [{"email": "victor@example.com", "method": "oidc", "reason": "email_unverified"}]
    row = AuditEntry.objects.get(action="auth.sign_in_failed", target_id=str(victor.pk))
    assert (row.changes["method"]["to"], row.changes["reason"]["to"]) == ("oidc", "email_unverified")


def test_entra_ids_domain_verified_claim_counts_as_verified(configured, widget):
    erin = HumanAgentFactory(widget=widget, name="Erin", email="erin@example.com")
    client = Client()

    back = process.browse(configured, start(client), "erin")
    answer = client.get(callback_path(back))

    assert answer.status_code == 302
    assert signed_in_user_id(client) == str(erin.user.pk)


def test_an_email_nobody_vouches_for_is_refused(configured, widget, refusals):
    HumanAgentFactory(widget=widget, name="Nora", email="nora@example.com")
    client = Client()

    back = process.browse(configured, start(client), "nobody-vouches")
    answer = client.get(callback_path(back))

    assert answer.status_code == 403
    assert signed_in_user_id(client) is None
    assert refusals[-1]["reason"] == "email_unverified"


def test_an_email_of_no_operator_is_refused_and_nobody_is_created(configured, anna, refusals):
    client = Client()
    users, agents = get_user_model().objects.count(), Agent.objects.count()

    back = process.browse(configured, start(client), "stranger")
    answer = client.get(callback_path(back))

    assert answer.status_code == 403
    assert "No operator of this console has the e-mail address" in answer.content.decode()
    assert signed_in_user_id(client) is None
    assert (get_user_model().objects.count(), Agent.objects.count()) == (users, agents)
    assert refusals == [{"email": "stranger@example.com", "method": "oidc", "reason": "unknown_email"}]


def test_a_banned_operator_is_refused(configured, widget, refusals):
    HumanAgentFactory(widget=widget, name="Bert", email="bert@example.com", status=Agent.Status.BANNED)
    client = Client()

    back = process.browse(configured, start(client), "banned")
    answer = client.get(callback_path(back))

    assert answer.status_code == 403
    assert signed_in_user_id(client) is None
    assert refusals[-1]["reason"] == "unknown_email"


def test_a_wrong_state_is_refused(configured, anna, refusals):
    client = Client()

    back = process.browse(configured, start(client), "anna")
    answer = client.get(callback_path(with_query(back, state="not-the-state")))

    assert answer.status_code == 400
    assert "has expired or was already used" in answer.content.decode()
    assert signed_in_user_id(client) is None
    assert refusals[-1]["reason"] == "state_mismatch"


def test_a_replayed_callback_is_refused(configured, anna, refusals):
    client = Client()
    back = process.browse(configured, start(client), "anna")
    assert client.get(callback_path(back)).status_code == 302
    other = Client()  # the same answer replayed from another browser (or again in this one)

    answers = [other.get(callback_path(back)), client.get(callback_path(back))]

    assert [a.status_code for a in answers] == [400, 400]
    assert signed_in_user_id(other) is None
    assert [call["reason"] for call in refusals] == ["state_mismatch", "state_mismatch"]


def test_an_id_token_with_another_nonce_is_refused(configured, anna, refusals, caplog):
    client = Client()
    authorize = start(client)

    # The provider signs whatever nonce the authorization request carried: not the one this
    # session keeps for its state.
    back = process.browse(configured, with_query(authorize, nonce="a-nonce-this-session-never-sent"), "anna")
    answer = client.get(callback_path(back))

    assert answer.status_code == 401
    assert signed_in_user_id(client) is None
    assert refusals[-1]["reason"] == "provider_refused"
    assert "Nonce verification failed" in caplog.text


def test_the_providers_refusal_is_shown(configured, anna, refusals):
    client = Client()
    state = parse_qs(urlsplit(start(client)).query)["state"][0]

    answer = client.get("/console/sso/callback/", {"error": "access_denied", "state": state})

    assert answer.status_code == 401
    assert "did not confirm who you are" in answer.content.decode()
    assert state not in client.session["oidc_states"]
    assert refusals[-1]["reason"] == "provider_refused"


def test_a_next_outside_the_console_lands_on_the_chats(configured, anna):
    client = Client()

    back = process.browse(configured, start(client, next_url="https://evil.example/"), "anna")
    answer = client.get(callback_path(back))

    assert answer["Location"] == "/console/"


def test_the_login_page_offers_the_provider(configured):
    page = Client().get("/console/login/?next=/console/reports/").content.decode()

    assert "Sign in with Example ID" in page
    assert "/console/sso/start/?next=/console/reports/" in page


def test_an_unreachable_provider_is_said_on_the_login_page(configured, settings):
    settings.OIDC_ISSUER = f"https://127.0.0.1:{closed_port()}/o"

    answer = Client().get("/console/sso/start/")

    assert answer.status_code == 502
    assert "cannot be reached right now" in answer.content.decode()


def test_password_sign_ins_never_ask_the_provider(configured, settings, operator):
    settings.OIDC_ISSUER = f"https://127.0.0.1:{closed_port()}/o"  # asking it would fail

    assert authenticate(None, username=operator.user.get_username(), password=PASSWORD) == operator.user
    answer = Client().post("/console/login/", {"email": "olga@example.com", "password": PASSWORD})
    assert answer.status_code == 302


def test_without_an_issuer_there_is_no_single_sign_on(settings):
    settings.OIDC_ISSUER = ""

    page = Client().get("/console/login/").content.decode()

    assert "sso" not in page
    assert Client().get("/console/sso/start/").status_code == 404
    assert Client().get("/console/sso/callback/", {"code": "x", "state": "y"}).status_code == 404
    assert not sso.enabled()
