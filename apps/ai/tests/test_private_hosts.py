"""AI_PRIVATE_HOSTS: the owner's own model servers on a private network are reachable by AI
credentials (chat and embeddings, `http://` too) and by nothing else; the address stays pinned, and a
listed name that resolves to an unlisted private address is refused."""

from __future__ import annotations

import ipaddress
import socket

import pytest
from django.core.exceptions import ImproperlyConfigured

from apps.ai.models import Credential
from apps.ai.providers import ChatMessage, ProviderConfig, ProviderError, check_base_url, complete, embed
from apps.ai.tests.conftest import idem
from apps.platform import outbound
from apps.platform.outbound import policy
from tests.support.plugin import assert_problem

LISTED = ["ollama.lan", "192.168.1.0/24", "10.0.0.7"]
ADDRESSES = {
    "ollama.lan": "192.168.1.10",  # listed name, listed range
    "vllm.lan": "192.168.1.20",  # unlisted name, listed range
    "rebound.lan": "192.168.1.10",  # re-pointed below to an unlisted private address
    "metadata.lan": "169.254.169.254",
}
BASE = "/api/v1/ai/credentials"


@pytest.fixture
def lan(settings, monkeypatch):
    """AI_PRIVATE_HOSTS lists the office's model servers; names resolve as ADDRESSES says (the
    rest publicly); loopback is closed, as in production."""
    settings.AI_PRIVATE_HOSTS = LISTED + ["rebound.lan"]
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    addresses = dict(ADDRESSES)

    def resolve(host, port):
        return [ipaddress.ip_address(addresses.get(host, "93.184.216.34"))]

    monkeypatch.setattr(policy, "resolve_host", resolve)
    return addresses


@pytest.fixture
def lan_wire(monkeypatch):
    """The LAN, simulated: a connection the guard pinned to 192.168.1.10 is delivered to the loopback
    fake on the same port (the guard has already checked and pinned the address by then)."""
    real = socket.create_connection
    dialled: list[tuple[str, int]] = []

    def create_connection(address, *args, **kwargs):
        host, port = address[0], address[1]
        dialled.append((host, port))
        if host == "192.168.1.10":
            address = ("127.0.0.1", port)
        return real(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", create_connection)
    return dialled


# --- the policy -------------------------------------------------------------------------------------------


def test_a_listed_range_opens_its_addresses_to_the_allowance_only(lan):
    private = policy.ai_private_hosts()
    assert str(policy.pin_address("ollama.lan", 11434, private_hosts=private)) == "192.168.1.10"
    assert str(policy.pin_address("10.0.0.7", 443, private_hosts=private)) == "10.0.0.7"
    with pytest.raises(outbound.OutboundBlocked):
        policy.pin_address("ollama.lan", 11434)  # no allowance: today's refusal
    with pytest.raises(outbound.OutboundBlocked):
        policy.pin_address("10.0.0.8", 443, private_hosts=private)  # next to the listed address


def test_a_listed_name_rebound_to_an_unlisted_private_address_is_refused(lan):
    private = policy.ai_private_hosts()
    assert str(policy.pin_address("rebound.lan", 80, private_hosts=private)) == "192.168.1.10"
    lan["rebound.lan"] = "10.9.9.9"
    with pytest.raises(outbound.OutboundBlocked) as refused:
        policy.pin_address("rebound.lan", 80, private_hosts=private)
    assert refused.value.reason == "address_not_allowed"
    with pytest.raises(ProviderError) as failure:
        check_base_url("http://rebound.lan/v1")
    assert failure.value.kind == "refused_address"


def test_metadata_and_embedded_forms_stay_refused_inside_a_listed_range(settings):
    private = policy.parse_private_hosts(("169.254.0.0/16", "::ffff:0:0/96", "192.168.0.0/16"))
    with pytest.raises(outbound.OutboundBlocked):
        policy.pin_address("169.254.169.254", 80, private_hosts=private)
    with pytest.raises(outbound.OutboundBlocked):
        policy.pin_address("::ffff:192.168.1.10", 80, private_hosts=private)
    assert str(policy.pin_address("169.254.1.1", 80, private_hosts=private)) == "169.254.1.1"


def test_http_only_for_a_listed_host(lan):
    private = policy.ai_private_hosts()
    policy.check_url("http://ollama.lan:11434/v1", private_hosts=private)
    policy.check_url("http://192.168.1.10:11434/v1", private_hosts=private)
    for url in ("http://vllm.lan/v1", "http://192.168.2.1/v1", "http://example.com/v1"):
        with pytest.raises(outbound.OutboundBlocked) as refused:
            policy.check_url(url, private_hosts=private)
        assert refused.value.reason == "scheme_not_allowed"
    with pytest.raises(outbound.OutboundBlocked):
        policy.check_url("http://ollama.lan:11434/v1")  # no allowance


@pytest.mark.parametrize(
    "entry",
    [
        "0.0.0.0/0",
        "::/0",
        "*.lan",
        "10.0.0.0/33",
        "127.1",
        "a b",
        "10.0.0.7:0",
        "10.0.0.7:65536",
        "ollama.lan:http",
        "ollama.lan:",
        "[fd00::7]x",
        "[fd00::7",
    ],
)
def test_a_malformed_setting_names_the_entry(entry):
    with pytest.raises(ImproperlyConfigured, match="AI_PRIVATE_HOSTS"):
        policy.parse_private_hosts((entry,))


# --- ports, loopback and metadata --------------------------------------------------------------------------


def test_an_entry_with_a_port_opens_that_port_only(settings, monkeypatch):
    settings.AI_PRIVATE_HOSTS = ["10.0.0.7:11434", "[fd00::7]:8000", "192.168.2.0/24:8080", "ollama.lan:11434"]
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    monkeypatch.setattr(policy, "resolve_host", lambda host, port: [ipaddress.ip_address("10.0.0.7")])
    private = policy.ai_private_hosts()
    assert str(policy.pin_address("10.0.0.7", 11434, private_hosts=private)) == "10.0.0.7"
    assert str(policy.pin_address("ollama.lan", 11434, private_hosts=private)) == "10.0.0.7"
    assert str(policy.pin_address("fd00::7", 8000, private_hosts=private)) == "fd00::7"
    assert str(policy.pin_address("192.168.2.9", 8080, private_hosts=private)) == "192.168.2.9"
    for host, port in [("10.0.0.7", 22), ("10.0.0.7", 443), ("ollama.lan", 6379), ("fd00::7", 22), ("192.168.2.9", 80)]:
        with pytest.raises(outbound.OutboundBlocked) as refused:
            policy.pin_address(host, port, private_hosts=private)
        assert refused.value.reason == "address_not_allowed"
    policy.check_url("http://ollama.lan:11434/v1", private_hosts=private)
    policy.check_url("http://[fd00::7]:8000/v1", private_hosts=private)
    for url in ("http://ollama.lan/v1", "http://ollama.lan:8080/v1", "http://10.0.0.7:22/", "http://[fd00::7]/v1"):
        with pytest.raises(outbound.OutboundBlocked) as refused:
            policy.check_url(url, private_hosts=private)
        assert refused.value.reason == "scheme_not_allowed"
    with pytest.raises(ProviderError):
        check_base_url("http://10.0.0.7:6379/")


def test_an_entry_without_a_port_opens_every_port(lan):
    private = policy.ai_private_hosts()
    for port in (22, 443, 11434):
        assert str(policy.pin_address("10.0.0.7", port, private_hosts=private)) == "10.0.0.7"


@pytest.mark.parametrize("entry", ["127.0.0.1", "127.0.0.0/8", "127.0.0.1:11434", "::1", "[::1]:8000"])
def test_a_loopback_entry_stops_start_up_unless_loopback_is_open_already(settings, entry):
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    settings.AI_PRIVATE_HOSTS = [entry]
    with pytest.raises(ImproperlyConfigured, match="loopback"):
        policy.ai_private_hosts()
    # a test or demo that opened loopback for every caller may list it (for http:// there)
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    assert policy.ai_private_hosts()


def test_a_range_around_loopback_never_opens_it(settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    private = policy.parse_private_hosts(("64.0.0.0/2", "::/1"))
    assert str(policy.pin_address("100.64.0.1", 80, private_hosts=private)) == "100.64.0.1"
    for address in ("127.0.0.1", "127.9.9.9", "::1"):
        with pytest.raises(outbound.OutboundBlocked) as refused:
            policy.pin_address(address, 80, private_hosts=private)
        assert "loopback" in refused.value.address


METADATA = [
    "169.254.169.254",
    "169.254.169.253",
    "169.254.169.123",
    "169.254.170.2",
    "169.254.170.23",
    "169.254.0.23",
    "168.63.129.16",
    "100.100.100.200",
    "192.0.0.192",
    "fd00:ec2::254",
    "fd00:ec2::23",
]


@pytest.mark.parametrize("address", METADATA)
def test_every_metadata_address_stays_refused_even_when_listed(settings, address):
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    listed = ("169.254.0.0/16", "168.63.129.0/24", "100.64.0.0/10", "192.0.0.0/24", "fd00::/8", address)
    private = policy.parse_private_hosts(listed)
    with pytest.raises(outbound.OutboundBlocked) as refused:
        policy.pin_address(address, 80, private_hosts=private)
    assert "cloud_metadata" in refused.value.address
    with pytest.raises(outbound.OutboundBlocked):  # nor for any other caller
        policy.pin_address(address, 443)


# --- base_url takes no query or fragment -------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    "base_url",
    ["http://ollama.lan:11434/x?", "http://ollama.lan:11434/v1?a=b", "https://llm.example.com/v1#x", "https://h/?#"],
)
def test_a_base_url_with_a_query_or_fragment_is_refused(client, lan, base_url):
    r = client.post(
        BASE,
        {"provider": "openai_compatible", "api_key": "k", "base_url": base_url, "model": "m"},
        format="json",
        **idem(),
    )
    problem = assert_problem(r, 422)
    assert "no query" in problem["errors"]["base_url"][0]
    assert not Credential.objects.exists()
    with pytest.raises(ProviderError) as failure:
        check_base_url(base_url)
    assert (failure.value.kind, failure.value.detail) == ("bad_request", "base_url_query")


def test_a_stored_base_url_with_a_query_is_never_called(llm_fake):
    fake = llm_fake("openai_compatible")
    config = ProviderConfig("openai_compatible", api_key=fake.api_key, base_url=f"{fake.base_url}?", model="m")
    with pytest.raises(ProviderError) as failure:
        complete([config], [ChatMessage("user", "hi")])
    assert (failure.value.kind, failure.value.detail) == ("bad_request", "base_url_query")
    assert fake.requests == []


# --- AI credentials reach the listed servers ---------------------------------------------------------------


@pytest.mark.parametrize("flavor", ["openai_compatible", "openai"])
def test_chat_and_embeddings_over_http_to_a_listed_lan_server(llm_fake, lan, lan_wire, settings, flavor):
    fake = llm_fake(flavor, tls=False)
    # llm_fake opened loopback: the LAN range alone must let this through (lan_wire delivers the
    # pinned LAN address to the fake on loopback).
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    config = ProviderConfig(flavor, api_key=fake.api_key, base_url=f"http://ollama.lan:{fake.port}/v1", model="m")
    answer = complete([config], [ChatMessage("user", "hi")])
    assert answer.text == fake.text
    vectors = embed([config], ["доставка", "delivery"])
    assert len(vectors) == 2
    assert {d for d in lan_wire if d[1] == fake.port} == {("192.168.1.10", fake.port)}
    assert [r.headers["host"] for r in fake.requests] == [f"ollama.lan:{fake.port}"] * 2


def test_an_unlisted_lan_server_is_refused_before_any_connection(llm_fake, lan, lan_wire, settings):
    fake = llm_fake("openai_compatible", tls=False)
    settings.AI_PRIVATE_HOSTS = []
    config = ProviderConfig("openai_compatible", api_key="k", base_url=f"http://ollama.lan:{fake.port}/v1", model="m")
    with pytest.raises(ProviderError) as failure:
        complete([config], [ChatMessage("user", "hi")])
    assert failure.value.kind == "refused_address"
    assert lan_wire == [] and fake.requests == []


@pytest.mark.django_db
@pytest.mark.parametrize(
    "base_url",
    ["https://192.168.1.10:11434/v1", "http://192.168.1.10:11434/v1", "https://10.0.0.7/v1", "http://ollama.lan/v1"],
)
def test_the_api_saves_a_credential_on_a_listed_host(client, lan, base_url):
    r = client.post(
        BASE,
        {"provider": "openai_compatible", "api_key": "ollama", "base_url": base_url, "model": "llama3.1:8b"},
        format="json",
        **idem(),
    )
    assert r.status_code == 201, r.content
    assert r.json()["base_url"] == base_url


@pytest.mark.django_db
@pytest.mark.parametrize(
    "base_url,message",
    [
        ("https://10.0.0.8/v1", "private network"),
        ("http://vllm.lan/v1", "scheme_not_allowed"),
        ("http://93.184.216.34/v1", "scheme_not_allowed"),
        ("https://metadata.lan/v1", "private network"),
    ],
)
def test_the_api_refuses_an_unlisted_host(client, lan, base_url, message):
    r = client.post(
        BASE, {"provider": "openai_compatible", "api_key": "k", "base_url": base_url}, format="json", **idem()
    )
    problem = assert_problem(r, 422)
    assert message in problem["errors"]["base_url"][0]
    assert not Credential.objects.exists()


# --- nothing else gets the exception -----------------------------------------------------------------------


@pytest.mark.parametrize("url", ["https://ollama.lan/x", "http://ollama.lan/x", "https://192.168.1.10/x"])
def test_every_other_outbound_caller_is_refused(lan, url, no_socket):
    from apps.channels.providers.aliexpress import AliExpress
    from apps.core.errors import AppError
    from apps.core.files import fetch_url
    from apps.kb.services import check_start_url
    from apps.webhooks.subscriptions import check_destination

    with pytest.raises(AppError):  # a webhook's destination
        check_destination(url)
    with outbound.get_session() as session, pytest.raises(outbound.OutboundBlocked):  # a webhook delivery
        session.send_bytes("POST", url, body=b"{}", headers={"Content-Type": "application/json"})
    with pytest.raises(AppError):  # a file fetched by URL
        fetch_url(url)
    assert check_start_url(url) is not None  # the crawler's start URL
    with outbound.get_session() as session, pytest.raises(outbound.OutboundBlocked):  # the crawler's fetch
        session.request("GET", url)
    result = AliExpress().call("POST", url, payload={})  # a messenger
    assert not result.ok and result.description.startswith("blocked")
    with outbound.guarded_httpx_client() as client, pytest.raises(outbound.OutboundBlocked):
        client.get(url)
    assert no_socket == []


@pytest.fixture
def no_socket(monkeypatch):
    attempts: list[object] = []

    def refuse(sock, address):
        attempts.append(address)
        raise AssertionError(f"a socket was opened to {address}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    return attempts
