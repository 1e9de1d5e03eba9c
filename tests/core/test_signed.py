"""The signed envelope of application-assistant calls (apps.core.signed)."""

from __future__ import annotations

import time

import pytest

from apps.core import ports, services, signed
from apps.core.models import SignedNonce

SECRET = "s" * 48
METHOD, PATH = "POST", "/api/v1/ai/assistant/turn"


def verify(**kwargs):
    """`signed.verify` of a request to METHOD PATH (tests of other paths pass their own)."""
    return signed.verify(**{"method": METHOD, "path": PATH, **kwargs})


@pytest.fixture
def bound(widget, provide_port):
    issued = services.issue_token(widget=widget, scopes=["ai:write"])
    provide_port(
        ports.SIGNING_BINDING,
        lambda w: signed.SigningBinding(token_id=issued.token.pk, secret=SECRET) if w.pk == widget.pk else None,
    )
    return issued.token


def meta(body: bytes, *, ts=None, nonce="n" * 16, secret=SECRET, signature=None, method=METHOD, path=PATH) -> dict:
    ts = str(int(time.time()) if ts is None else ts)
    signature = signature or signed.sign(secret=secret, timestamp=ts, nonce=nonce, method=method, path=path, body=body)
    return {"HTTP_X_SERVICE_TIMESTAMP": ts, "HTTP_X_SERVICE_NONCE": nonce, "HTTP_X_SERVICE_SIGNATURE": signature}


def test_a_good_signature_passes_and_uses_its_nonce(widget, bound):
    body = b'{"a": 1}'
    assert verify(widget=widget, token=bound, meta=meta(body), body=body) == "n" * 16
    with pytest.raises(signed.NonceReused):
        verify(widget=widget, token=bound, meta=meta(body), body=body)


@pytest.mark.parametrize("offset", [301, -301, 100000])
def test_stale_and_future_timestamps_are_401_and_do_not_use_the_nonce(widget, bound, offset):
    body = b"{}"
    with pytest.raises(signed.StaleTimestamp):
        verify(widget=widget, token=bound, meta=meta(body, ts=int(time.time()) + offset), body=body)
    assert not SignedNonce.objects.exists()
    verify(widget=widget, token=bound, meta=meta(body), body=body)


@pytest.mark.parametrize("offset", [299, -299])
def test_inside_the_window_passes(widget, bound, offset):
    verify(widget=widget, token=bound, meta=meta(b"", ts=int(time.time()) + offset), body=b"")


@pytest.mark.parametrize(
    "change",
    ["body", "secret", "nonce", "timestamp", "method", "path", "uppercase", "prefix", "missing", "empty"],
)
def test_a_bad_signature_is_401_and_does_not_burn_the_nonce(widget, bound, change):
    body = b'{"a": 1}'
    headers = meta(body)
    if change == "body":
        sent = b'{"a": 2}'
    else:
        sent = body
    if change == "secret":
        headers = meta(body, secret="x" * 48)
    elif change == "nonce":
        headers["HTTP_X_SERVICE_SIGNATURE"] = meta(body, nonce="m" * 16)["HTTP_X_SERVICE_SIGNATURE"]
    elif change == "timestamp":
        headers["HTTP_X_SERVICE_SIGNATURE"] = meta(body, ts=int(time.time()) - 1)["HTTP_X_SERVICE_SIGNATURE"]
    elif change == "method":
        headers = meta(body, method="PUT")
    elif change == "path":
        headers = meta(body, path="/api/v1/ai/assistant/account-link/revoke")
    elif change == "uppercase":
        headers["HTTP_X_SERVICE_SIGNATURE"] = headers["HTTP_X_SERVICE_SIGNATURE"].upper()
    elif change == "prefix":
        headers["HTTP_X_SERVICE_SIGNATURE"] = headers["HTTP_X_SERVICE_SIGNATURE"].replace("sha256=v2:", "sha256=")
    elif change == "missing":
        del headers["HTTP_X_SERVICE_SIGNATURE"]
    elif change == "empty":
        headers["HTTP_X_SERVICE_SIGNATURE"] = ""
    with pytest.raises(signed.InvalidSignature):
        verify(widget=widget, token=bound, meta=headers, body=sent)
    assert not SignedNonce.objects.exists()
    verify(widget=widget, token=bound, meta=meta(body), body=body)  # the nonce still works


@pytest.mark.parametrize(
    "nonce", ["short", "n" * 65, "has space 1234567", "emoji😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀", "a/b" * 6]
)
def test_a_malformed_nonce_is_401(widget, bound, nonce):
    with pytest.raises(signed.InvalidSignature):
        verify(widget=widget, token=bound, meta=meta(b"", nonce=nonce), body=b"")


def test_a_non_numeric_timestamp_is_401(widget, bound):
    headers = meta(b"")
    headers["HTTP_X_SERVICE_TIMESTAMP"] = "1e9"
    with pytest.raises(signed.InvalidSignature):
        verify(widget=widget, token=bound, meta=headers, body=b"")


def test_another_token_of_the_widget_is_403_token_not_bound(widget, bound):
    other = services.issue_token(widget=widget, scopes=["ai:write"]).token
    with pytest.raises(signed.TokenNotBound):
        verify(widget=widget, token=other, meta=meta(b""), body=b"")
    assert not SignedNonce.objects.exists()


def test_an_unbound_widget_is_403(widget, other_widget, bound):
    token = services.issue_token(widget=other_widget, scopes=["ai:write"]).token
    with pytest.raises(signed.TokenNotBound):
        verify(widget=other_widget, token=token, meta=meta(b""), body=b"")


def test_no_binding_provider_is_403(widget, provide_port):
    provide_port(ports.SIGNING_BINDING, None)
    token = services.issue_token(widget=widget, scopes=["ai:write"]).token
    with pytest.raises(signed.TokenNotBound):
        verify(widget=widget, token=token, meta=meta(b""), body=b"")


def test_a_nonce_older_than_600_seconds_is_free_again(widget, bound):
    from datetime import timedelta

    from django.utils import timezone

    verify(widget=widget, token=bound, meta=meta(b""), body=b"")
    SignedNonce.objects.update(created_at=timezone.now() - timedelta(seconds=601))
    verify(widget=widget, token=bound, meta=meta(b""), body=b"")
    assert signed.purge_nonces() == 0 and SignedNonce.objects.count() == 1


def test_nonces_are_per_widget(widget, other_widget, bound):
    verify(widget=widget, token=bound, meta=meta(b""), body=b"")
    assert SignedNonce.objects.filter(widget=widget).count() == 1


def test_the_legacy_signature_is_accepted_before_the_deprecation_date_only(widget, bound, settings):
    body = b'{"a": 1}'
    ts = str(int(time.time()))
    legacy = signed.sign_legacy(secret=SECRET, timestamp=ts, nonce="n" * 16, body=body)
    headers = meta(body, signature=legacy, ts=ts)
    settings.SIGNED_V1_ACCEPTED_UNTIL = "2026-01-01"
    with pytest.raises(signed.InvalidSignature):
        signed.verify(widget=widget, token=bound, meta=headers, method=METHOD, path=PATH, body=body)
    settings.SIGNED_V1_ACCEPTED_UNTIL = "2999-01-01"
    assert signed.verify(widget=widget, token=bound, meta=headers, method="PUT", path="/x", body=body) == "n" * 16
    # a v2 signature is never checked as v1, inside the window too
    forged = meta(body, nonce="o" * 16, method="PUT")
    with pytest.raises(signed.InvalidSignature):
        verify(widget=widget, token=bound, meta=forged, body=body)
