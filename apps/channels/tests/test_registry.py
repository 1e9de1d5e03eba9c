"""The provider registry is the one dispatch point of the messengers: every provider code the
messenger routes take (Telegram and VK included) is a registry provider, the services reach a
provider only through the registry's hooks, and no service branches on a provider's code."""

from __future__ import annotations

import ast
import re
import uuid
from pathlib import Path

import pytest

from apps.billing.models import AccountPlan, Plan
from apps.channels import messengers
from apps.channels.hook_urls import urlpatterns as hook_patterns
from apps.channels.models import MessengerConnection
from apps.channels.providers import registry
from apps.channels.providers.base import Credential, HookRequest, Inbound, Provider, SendRequest, same
from apps.core import crypto
from tests.support.plugin import assert_problem

APP = Path(messengers.__file__).parent
# the modules that dispatch to providers: none of them may name one
DISPATCHERS = ("messengers.py", "delivery.py", "services.py", "handlers.py", "tasks.py", "api/messenger_views.py")


def test_every_provider_of_the_messenger_routes_is_a_registry_provider():
    codes = [code for code in messengers.PROVIDERS if code != messengers.CUSTOM]
    assert {"tg", "vk"} <= set(codes)
    assert codes == list(registry.PROVIDERS)
    hook = re.compile(hook_patterns[0].pattern.regex.pattern)
    for code in codes:
        provider = registry.get(code)
        assert isinstance(provider, Provider) and provider.code == code
        assert hook.match(f"{code}/abc/"), code  # its inbound hook route takes it too
    assert registry.get(messengers.CUSTOM) is None


def _code_literals(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    codes = set(messengers.PROVIDERS) - {"custom"}
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in codes and id(node) not in docstrings
    ]


@pytest.mark.parametrize("name", DISPATCHERS)
def test_no_dispatcher_names_a_provider(name):
    path = APP / name
    assert _code_literals(path) == [], f"{name} branches on a provider code; add a hook to providers/base.py"
    imported = {
        alias.name
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("providers")
        for alias in node.names
    }
    assert imported <= {"registry"}, f"{name} imports a provider module: {imported - {'registry'}}"


# --- the services call the registered provider, whatever it is ------------------------------------


class Stub(Provider):
    """Registered as `tg`: a refusing probe, Telegram's secret header, a hook answer of its own."""

    code = "tg"

    def probe(self, token: str) -> str | None:
        return "stub refusal"

    def authentic(self, cred: Credential, hook_secret: str, request: HookRequest) -> bool:
        return same(hook_secret, request.headers.get("x-telegram-bot-api-secret-token"))

    def parse(self, cred: Credential, data: dict) -> list[Inbound]:
        return []

    def hook_answer(self, data: dict) -> tuple[str, bytes]:
        return "text/plain", b"stub"

    def send_payload(self, *, address: str, text: str) -> dict:
        return {}

    def send_request(self, cred: Credential, stored: dict) -> SendRequest:
        return SendRequest("https://127.0.0.1:9/", b"")


@pytest.fixture
def stub(monkeypatch):
    provider = Stub()
    monkeypatch.setitem(registry.PROVIDERS, "tg", provider)
    return provider


@pytest.mark.django_db
def test_connect_probes_through_the_registered_provider(api, widget, stub):
    plan = Plan.objects.create(slug="test-pro", name="Test Pro", is_paid=True, paid_features=["messengers"])
    AccountPlan.objects.create(account=widget.account, plan=plan)
    response = api(scopes=["messengers:write"]).put(
        "/api/v1/messengers/tg",
        {"token": "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"},
        format="json",
        HTTP_X_SERVICE_IDEMPOTENCY_KEY=str(uuid.uuid4()),
    )
    body = assert_problem(response, 422, "credential_rejected")
    assert body["errors"]["token"] == ["Rejected by the provider: stub refusal"]
    assert not MessengerConnection.objects.exists()


@pytest.mark.django_db
def test_the_hook_answers_through_the_registered_provider(client, widget, stub):
    conn = MessengerConnection.objects.create(
        widget=widget,
        provider="tg",
        hook_id="hook-1",
        token_encrypted=crypto.encrypt_secret("123:abc"),
        hook_secret_encrypted=crypto.encrypt_secret("s3cret"),
        inbound_live=True,
    )
    response = client.post(
        f"/api/hooks/tg/{conn.hook_id}/",
        data=b'{"update_id": 1}',
        content_type="application/json",
        HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN="s3cret",
    )
    assert response.status_code == 200 and response.content == b"stub"


# --- one list of messenger codes, one door per provider ----------------------------------------------------

ROOT = APP.parents[1]
PROVIDER_MODULES = {path.stem for path in (APP / "providers").glob("*.py")} - {"__init__", "registry", "base"}


def _production_modules():
    for top in ("apps", "config"):
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = path.relative_to(ROOT).parts
            if "tests" not in parts and "migrations" not in parts and parts[:3] != ("apps", "core", "testing"):
                yield path


def code_lists(source: str, codes: set[str]) -> list[int]:
    """Lines of the literal lists, tuples and sets in `source` that hold every one of `codes`."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.List | ast.Tuple | ast.Set)
        and codes <= {item.value for item in node.elts if isinstance(item, ast.Constant)}
    ]


def test_the_messenger_codes_are_written_once_in_the_registry():
    codes = set(registry.PROVIDERS)
    copies = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in _production_modules()
        for line in code_lists(path.read_text(), codes)
    ]
    assert copies == []
    assert code_lists('CHOICES = ["tg", "vk", "wa", "vb", "fb", "ok", "mx", "cian", "ali", "apple", "custom"]', codes)
    # a vocabulary of its own that shares some codes (the departments' channels) is not a copy
    assert code_lists('CHANNELS = ("tg", "vk", "wa", "vb", "fb", "ok", "smb")', codes) == []


def test_the_documented_provider_codes_are_the_registrys_in_its_order():
    from apps.channels.api.serializers import MessengerDoc

    assert list(MessengerDoc().fields["provider"].choices) == [*registry.PROVIDERS, messengers.CUSTOM]


def test_no_module_outside_the_providers_reaches_a_provider_by_its_module():
    """The services reach a provider through the registry (VK's communities too), never by importing it."""
    found = []
    for path in _production_modules():
        if path.parent == APP / "providers":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                module = node.module.split(".")
                if "providers" in module and module[-1] in PROVIDER_MODULES:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
                if module[-1] == "providers" and {a.name for a in node.names} & PROVIDER_MODULES:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []
