"""Known-answer tests of both signature schemes, body determinism and PII masking (property-based)."""

import hashlib
import hmac
import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apps.core.crypto import decrypt_secret, encrypt_secret, generate_secret
from apps.webhooks import payloads, signing


def test_standard_webhooks_published_vector():
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    body = b'{"test": 2432232314}'
    signature = signing.standard_signature(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body)
    assert signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
    assert signing.verify_standard_signature(
        secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body, "v1,bm9wZQ== " + signature
    )


def test_service_signature_known_answer():
    # HMAC-SHA256(key="secret", msg="{}") computed independently with the standard library.
    expected = hmac.new(b"secret", b"{}", hashlib.sha256).hexdigest()
    assert signing.service_signature("secret", b"{}") == f"sha256=v1:{expected}"
    assert signing.verify_service_signature("secret", b"{}", f"sha256=v1:{expected}")
    assert not signing.verify_service_signature("secret", b"{} ", f"sha256=v1:{expected}")


def test_service_signature_fixed_vector():
    assert (
        signing.service_signature("key", b"The quick brown fox jumps over the lazy dog")
        == "sha256=v1:f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"
    )


def test_secrets_are_standard_webhooks_format_and_encrypted_at_rest():
    secret = generate_secret()
    assert secret.startswith("whsec_") and len(signing.standard_key(secret)) == 32
    token = encrypt_secret(secret)
    assert secret not in token and decrypt_secret(token) == secret
    assert decrypt_secret("garbage") is None


def test_rotating_the_key_list_keeps_old_tokens_readable(settings):
    from cryptography.fernet import Fernet

    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.WEBHOOK_SECRET_KEYS = [old]
    token = encrypt_secret("whsec_x")
    settings.WEBHOOK_SECRET_KEYS = [new, old]
    from apps.core.crypto import rotate_token

    rotated = rotate_token(token)
    settings.WEBHOOK_SECRET_KEYS = [new]
    assert decrypt_secret(rotated) == "whsec_x" and decrypt_secret(token) is None


def test_body_rendering_is_deterministic():
    class Event:
        pk = "0b7f3c1e-0000-4000-8000-000000000001"
        type = "chat.closed"
        data = {"reason": "expired", "chat_id": 5, "button_guid": "a" * 32}

    first = payloads.render(Event, "native")
    assert first == payloads.render(Event, "native")
    assert json.loads(first) == {"id": Event.pk, "type": "chat.closed", "data": Event.data}


def test_log_payload_drops_button_id_and_masks_contacts():
    body = json.dumps(
        {
            "id": "e",
            "data": {
                "button_id": 7,
                "button_guid": "abc123",
                "name": "Ann",
                "email": "ann@example.com",
                "phone": "+7 (912) 345-67-89",
                "note": "card 4111 1111 1111 1111 ok",
            },
        }
    ).encode()
    logged = payloads.log_payload(body)
    assert "button_id" not in logged["data"]
    assert logged["data"]["email"] == "[скрыто]" and logged["data"]["phone"] == "[скрыто]"
    assert logged["data"]["note"] == "card [скрыто] ok"
    assert logged["data"]["button_guid"] == "abc123" and logged["data"]["name"] == "Ann"


@pytest.mark.parametrize("text", ["a" * 65536, "a." * 32768, "x@" + "a" * 65534, "a@" * 32768])
def test_masking_a_long_body_without_an_address_takes_linear_time(text):
    started = time.monotonic()
    assert payloads.mask_text(text) == text
    assert time.monotonic() - started < 1


def test_an_address_inside_a_run_of_address_characters_is_still_masked():
    assert payloads.mask_text("x%%ann.lee+tag@example.com, ok") == "[скрыто], ok"
    assert payloads.mask_text("see: ann@example.com") == "see: [скрыто]"


emails = st.from_regex(r"[a-z][a-z0-9._]{0,10}@[a-z]{1,10}\.(com|ru|org|info)", fullmatch=True)
phones = st.from_regex(r"\+?[1-9][0-9]{0,2}[ -]?\(?[0-9]{3}\)?[ -]?[0-9]{3}[ -]?[0-9]{2}[ -]?[0-9]{2}", fullmatch=True)
cards = st.lists(st.integers(0, 9), min_size=16, max_size=16).map(
    lambda ds: " ".join("".join(map(str, ds[i : i + 4])) for i in range(0, 16, 4))
)
filler = st.text(alphabet="abcdefghijklmnopqrstuvwxyzабвгдежз ,.!?", max_size=20)


@settings(max_examples=300, deadline=None)
@given(pii=st.one_of(emails, phones, cards), before=filler, after=filler, key=st.sampled_from(["name", "message", "x"]))
def test_no_generated_pii_survives(pii, before, after, key):
    body = json.dumps({"data": {key: f"{before} {pii} {after}", "nested": [{"v": pii}]}}, ensure_ascii=False).encode()
    logged = json.dumps(payloads.log_payload(body), ensure_ascii=False)
    assert pii not in logged
    assert "[скрыто]" in logged


def test_rotate_webhook_keys_command_reencrypts_under_the_newest_key(db, widget, settings, monkeypatch):
    import io
    import ipaddress

    from cryptography.fernet import Fernet
    from django.core.management import call_command

    from apps.platform import outbound
    from apps.webhooks import services
    from apps.webhooks.models import Subscription

    monkeypatch.setattr(outbound.policy, "resolve_host", lambda h, p: [ipaddress.ip_address("93.184.216.34")])
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.WEBHOOK_SECRET_KEYS = [old]
    sub, secret = services.create_subscription(widget=widget, url="https://h.example.com", events=["message.created"])
    settings.WEBHOOK_SECRET_KEYS = [new, old]
    out = io.StringIO()
    call_command("rotate_webhook_keys", stdout=out)
    assert json.loads(out.getvalue()) == {"rotated": 1}
    settings.WEBHOOK_SECRET_KEYS = [new]
    assert decrypt_secret(Subscription.objects.get(pk=sub.pk).secret_encrypted) == secret
