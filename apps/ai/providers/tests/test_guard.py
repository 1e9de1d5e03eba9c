"""Every driver's traffic goes through the guarded outbound transport: the address policy (loopback
only with OUTBOUND_ALLOW_LOOPBACK, every other refused range refused even then), https only, TLS
verified against REQUESTS_CA_BUNDLE."""

from __future__ import annotations

import asyncio
import ipaddress
import socket

import pytest

from apps.ai.providers import (
    PROVIDERS,
    ChatMessage,
    ProviderConfig,
    ProviderError,
    acomplete,
    check_base_url,
    complete,
    list_models,
)
from apps.platform.outbound import policy

HI = [ChatMessage("user", "hi")]


@pytest.fixture
def no_connect(monkeypatch):
    attempts: list[object] = []
    real_connect = socket.socket.connect

    def refuse(sock, address):
        attempts.append(address)
        raise AssertionError(f"a socket was opened to {address}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    yield attempts
    monkeypatch.setattr(socket.socket, "connect", real_connect)


@pytest.fixture
def resolves_to(monkeypatch):
    def set_address(address: str) -> None:
        monkeypatch.setattr(policy, "resolve_host", lambda host, port: [ipaddress.ip_address(address)])

    return set_address


@pytest.mark.parametrize("flavor", PROVIDERS)
@pytest.mark.parametrize("address", ["10.0.0.7", "192.168.1.20", "169.254.169.254", "100.64.0.1", "fd00::1"])
def test_private_addresses_are_refused_even_with_loopback_allowed(
    llm_fake, resolves_to, no_connect, settings, flavor, address
):
    llm_fake("openai")  # switches loopback on and trusts the fakes' CA, like every test here
    assert settings.OUTBOUND_ALLOW_LOOPBACK is True
    resolves_to(address)
    backup = llm_fake("openai")
    config = ProviderConfig(flavor, api_key="sk-secret", base_url="https://llm.example.com/v1", model="m")
    with pytest.raises(ProviderError) as failure:
        complete([config, backup.config()], HI)
    assert (failure.value.kind, failure.value.detail) == ("refused_address", "address_not_allowed")
    assert no_connect == []
    assert backup.requests == []  # a refused address is not a provider failure to fall back from


@pytest.mark.parametrize("flavor", PROVIDERS)
def test_private_literal_is_refused_async_too(llm_fake, no_connect, flavor):
    llm_fake("openai")
    config = ProviderConfig(flavor, api_key="k", base_url="https://10.1.2.3/v1", model="m")
    with pytest.raises(ProviderError) as failure:
        asyncio.run(acomplete([config], HI))
    assert failure.value.kind == "refused_address"
    assert no_connect == []


@pytest.mark.parametrize("flavor", PROVIDERS)
def test_loopback_is_refused_without_the_switch(llm_fake, settings, flavor):
    fake = llm_fake(flavor)
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    with pytest.raises(ProviderError) as failure:
        complete([fake.config()], HI)
    assert failure.value.kind == "refused_address"
    assert fake.requests == []


def test_plain_http_is_refused(llm_fake, no_connect):
    llm_fake("openai")
    config = ProviderConfig("openai_compatible", api_key="k", base_url="http://localhost:11434/v1", model="llama3")
    with pytest.raises(ProviderError) as failure:
        list_models(config)
    assert (failure.value.kind, failure.value.detail) == ("refused_address", "scheme_not_allowed")


@pytest.mark.parametrize("flavor", PROVIDERS)
def test_certificate_is_verified(llm_fake, monkeypatch, flavor):
    fake = llm_fake(flavor)
    monkeypatch.delenv("REQUESTS_CA_BUNDLE")  # the fakes' CA is no longer trusted
    with pytest.raises(ProviderError) as failure:
        complete([fake.config()], HI, max_operations=1)
    assert failure.value.kind == "transport"
    assert all(not r.path.endswith("/completions") and not r.path.endswith("/messages") for r in fake.requests)


def test_proxy_environment_is_ignored(llm_fake, monkeypatch):
    fake = llm_fake("anthropic")
    for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    assert complete([fake.config()], HI).text


@pytest.mark.parametrize(
    ("url", "resolved", "detail"),
    [
        ("http://llm.example.com/v1", "93.184.215.14", "scheme_not_allowed"),
        ("https://user:pw@llm.example.com/v1", "93.184.215.14", "userinfo_not_allowed"),
        ("https://llm.example.com/v1", "10.0.0.7", "address_not_allowed"),
        ("https://169.254.169.254/latest", None, "address_not_allowed"),
        ("https://[::ffff:10.0.0.1]/v1", None, "address_not_allowed"),
    ],
)
def test_check_base_url_refuses_through_the_address_policy(resolves_to, no_connect, settings, url, resolved, detail):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    if resolved:
        resolves_to(resolved)
    with pytest.raises(ProviderError) as failure:
        check_base_url(url)
    assert (failure.value.kind, failure.value.detail) == ("refused_address", detail)
    assert no_connect == []


def test_check_base_url_accepts_a_public_host_and_loopback_only_when_allowed(resolves_to, no_connect, settings):
    resolves_to("93.184.215.14")
    check_base_url("https://llm.example.com/v1")
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    with pytest.raises(ProviderError):
        check_base_url("https://127.0.0.1:8443/v1")
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    check_base_url("https://127.0.0.1:8443/v1")
    assert no_connect == []
