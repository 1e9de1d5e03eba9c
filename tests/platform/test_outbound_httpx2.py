"""The guarded httpx2 transport (the OpenAI and Anthropic SDKs' library): the same guard as the
httpx one, checked the same way: the hostile corpus never opens a socket, the connection goes to the
checked address with the hostname kept for TLS and Host, redirects are not followed and a hop a
caller chooses to follow is checked again."""

from __future__ import annotations

import asyncio

import httpx2
import pytest

from apps.platform.outbound import OutboundBlocked
from apps.platform.outbound.httpx2_transport import GuardedAsyncHTTPX2Transport, GuardedHTTPX2Transport

from . import test_outbound as _outbound
from .hostile_addresses import HOSTILE_CASES, HostileCase
from .test_outbound import FakeResolver, TLSServer

# The fixtures of the httpx transport's tests, shared.
resolver = _outbound.resolver
no_sockets = _outbound.no_sockets
connect_spy = _outbound.connect_spy
tls_server = _outbound.tls_server
server = _outbound.server


def _client(**transport_kwargs) -> httpx2.Client:
    return httpx2.Client(transport=GuardedHTTPX2Transport(**transport_kwargs), follow_redirects=False, trust_env=False)


@pytest.mark.parametrize("case", HOSTILE_CASES, ids=[case.id for case in HOSTILE_CASES])
def test_hostile_url_never_opens_a_socket_through_httpx2(
    case: HostileCase, resolver: FakeResolver, no_sockets: list, settings
) -> None:
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    resolver.table.update(case.resolves_to)
    with (
        _client(allowed_schemes=case.allowed_schemes) as client,
        pytest.raises((OutboundBlocked, httpx2.InvalidURL)),
    ):
        client.get(case.url)
    assert no_sockets == []


def test_httpx2_client_reaches_the_checked_address_keeping_the_hostname(
    server: TLSServer, connect_spy: list[str]
) -> None:
    with _client() as client:
        response = client.get(server.url("/echo-host", host="pinned.test"))
    assert response.status_code == 200
    assert response.content == f"pinned.test:{server.port}".encode()
    assert connect_spy == ["127.0.0.1"]
    assert server.sni_names == ["pinned.test"]


def test_httpx2_client_does_not_follow_redirects_and_checks_a_followed_hop(
    server: TLSServer, connect_spy: list[str]
) -> None:
    with _client() as client:
        assert client.get(server.url("/redirect?to=https://10.0.0.1/")).status_code == 302
        with pytest.raises(OutboundBlocked) as refused:
            client.get(server.url("/redirect?to=https://internal.test/"), follow_redirects=True)
    assert refused.value.reason == "address_not_allowed"
    assert set(connect_spy) == {"127.0.0.1"}


def test_httpx2_environment_proxy_is_ignored(server: TLSServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    with _client() as client:
        assert client.get(server.url("/ok")).content == b"hello outbound"


def test_async_httpx2_client_reaches_loopback_and_refuses_a_private_address(
    server: TLSServer, resolver: FakeResolver, settings
) -> None:
    async def fetch(url: str) -> httpx2.Response:
        async with httpx2.AsyncClient(transport=GuardedAsyncHTTPX2Transport(), trust_env=False) as client:
            return await client.get(url)

    assert asyncio.run(fetch(server.url("/ok"))).content == b"hello outbound"
    with pytest.raises(OutboundBlocked) as refused:
        asyncio.run(fetch("https://internal.test/"))
    assert refused.value.reason == "address_not_allowed"


def test_httpx2_certificate_is_verified(server: TLSServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REQUESTS_CA_BUNDLE")
    with _client() as client, pytest.raises(httpx2.ConnectError):
        client.get(server.url("/ok"))
