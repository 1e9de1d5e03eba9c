"""Two-factor sign-in's devices (django-otp): an authenticator app's TOTP device (RFC 6238) and ten
one-time recovery codes (a static device), enrolled, checked and removed here and nowhere else.

SECURITY: a code is checked with its device locked (`select_for_update`), so two requests carrying
the same TOTP code cannot both pass (django-otp keeps the last accepted time step, `last_t`) and a
recovery code is spent once. django-otp's own throttle (a wait that doubles with each wrong code)
applies on top of the sign-in budgets (`apps.console.signin`).
"""

from __future__ import annotations

import base64
import math
import re
from dataclasses import dataclass
from urllib.parse import quote, urlencode

import segno
from django.db import transaction
from django.utils import timezone
from django_otp.models import VerifyNotAllowed
from django_otp.plugins.otp_static.models import StaticDevice, StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice

from apps.audit import services as audit
from apps.widget import selectors as widget_selectors

from . import access

RECOVERY_CODES = 10
DEVICE_NAME = "console"
TOTP = "totp"
RECOVERY_CODE = "recovery_code"
_DIGITS = re.compile(r"[0-9]{6}")
_SEPARATORS = re.compile(r"[\s-]+")


@dataclass(frozen=True)
class Check:
    """The answer to a code: the device it matched (None when refused), the method it counts as
    (`totp`, `recovery_code`), and when refused because of django-otp's throttle, the seconds to
    wait."""

    device: object | None
    method: str
    wait: int = 0

    @property
    def passed(self) -> bool:
        return self.device is not None


# --- reads ---------------------------------------------------------------------------------------------


def confirmed_totp(user) -> TOTPDevice | None:
    return TOTPDevice.objects.filter(user=user, confirmed=True).order_by("pk").first()


def is_enrolled(user) -> bool:
    return TOTPDevice.objects.filter(user=user, confirmed=True).exists()


def recovery_codes_left(user) -> int:
    return StaticToken.objects.filter(device__user=user, device__confirmed=True).count()


def requiring_widgets(user) -> list[int]:
    """The widgets among the user's operator rows that require two-factor sign-in."""
    return widget_selectors.requiring_two_factor(access.operator_rows(user).values_list("widget_id", flat=True))


def required_for(user) -> bool:
    return bool(requiring_widgets(user))


def second_factor_required(user) -> bool:
    """Whether `user` must pass a second factor: they enrolled, or a widget of theirs requires it."""
    return is_enrolled(user) or required_for(user)


def secret_text(device: TOTPDevice) -> str:
    """The device's secret as an authenticator app takes it typed in: base32, in groups of four."""
    secret = base64.b32encode(device.bin_key).decode("ascii").rstrip("=")
    return " ".join(secret[i : i + 4] for i in range(0, len(secret), 4))


def provisioning_uri(device: TOTPDevice, *, issuer: str, account: str) -> str:
    """The otpauth:// URI an authenticator app reads from the QR code (Key Uri Format)."""
    secret = base64.b32encode(device.bin_key).decode("ascii").rstrip("=")
    label = quote(f"{issuer}:{account}", safe="@:")
    query = urlencode(
        {"secret": secret, "issuer": issuer, "algorithm": "SHA1", "digits": device.digits, "period": device.step}
    )
    return f"otpauth://totp/{label}?{query}"


def qr_svg(uri: str, *, title: str) -> str:
    """The QR code of `uri` as inline SVG: dark modules on a light square with the quiet zone, so it
    scans on a dark page too."""
    svg = segno.make(uri, error="m", micro=False).svg_inline(
        scale=5, border=4, dark="#000", light="#fff", title=title, svgclass="qr", lineclass=None, omitsize=True
    )
    # A viewBox and no fixed size: the page sizes it. role="img" names it by its <title>.
    return svg.replace("<svg ", '<svg role="img" ', 1)


def normalise(code: str) -> str:
    return _SEPARATORS.sub("", code or "").lower()[:32]


def method_of(code: str) -> str:
    """Six digits are an authenticator's code; anything else is read as a recovery code."""
    return TOTP if _DIGITS.fullmatch(normalise(code)) else RECOVERY_CODE


# --- writes --------------------------------------------------------------------------------------------


@transaction.atomic
def start_enrolment(user, *, device_id: int | None = None) -> TOTPDevice:
    """The device being enrolled in this session (`device_id`, kept by the caller in the session):
    it again while unconfirmed, else a new one with a fresh secret. Any other unconfirmed device of
    the user goes, so a secret shown in one session never becomes the one another confirms. A
    confirmed device is never touched here."""
    if device_id is not None:
        current = TOTPDevice.objects.filter(pk=device_id, user=user, confirmed=False).first()
        if current is not None:
            return current
    TOTPDevice.objects.filter(user=user, confirmed=False).delete()
    return TOTPDevice.objects.create(user=user, name=DEVICE_NAME, confirmed=False)


def _wait_of(device) -> int:
    allowed, extra = device.verify_is_allowed()
    if allowed:
        return 0
    until = (extra or {}).get("locked_until")
    if (extra or {}).get("reason") == VerifyNotAllowed.N_FAILED_ATTEMPTS and until is not None:
        return max(1, math.ceil((until - timezone.now()).total_seconds()))
    return 1


def _check(device_model, device_pk, code: str, method: str) -> Check:
    device = device_model.objects.select_for_update().get(pk=device_pk)
    wait = _wait_of(device)
    if wait:
        return Check(None, method, wait)
    return Check(device if device.verify_token(code) else None, method)


@transaction.atomic
def confirm_enrolment(user, code: str, *, device_id: int | None) -> tuple[Check, list[str]]:
    """Confirm the device being enrolled in this session with a code from the app. On success the
    device is the user's one TOTP device, ten new recovery codes replace any old ones, and the codes
    are returned (the only time they are readable); `auth.two_factor_enabled` is recorded for each
    widget."""
    pending = TOTPDevice.objects.filter(pk=device_id, user=user, confirmed=False).first() if device_id else None
    if pending is None:
        return Check(None, TOTP), []
    check = _check(TOTPDevice, pending.pk, normalise(code), TOTP)
    if not check.passed:
        return check, []
    device = check.device
    TOTPDevice.objects.filter(user=user).exclude(pk=device.pk).delete()
    device.confirmed = True
    device.save(update_fields=["confirmed"])
    codes = _new_recovery_codes(user)
    _record(user, "auth.two_factor_enabled")
    return check, codes


def _new_recovery_codes(user) -> list[str]:
    StaticDevice.objects.filter(user=user).delete()
    static = StaticDevice.objects.create(user=user, name=DEVICE_NAME, confirmed=True)
    codes: list[str] = []
    while len(codes) < RECOVERY_CODES:
        token = StaticToken.random_token()
        if token not in codes:
            codes.append(token)
    StaticToken.objects.bulk_create([StaticToken(device=static, token=token) for token in codes])
    return codes


@transaction.atomic
def verify(user, code: str) -> Check:
    """Check a code of an enrolled user: six digits against the authenticator (a code already used is
    refused), anything else against the recovery codes (each works once)."""
    method = method_of(code)
    code = normalise(code)
    if method == TOTP:
        device = confirmed_totp(user)
        model = TOTPDevice
    else:
        device = StaticDevice.objects.filter(user=user, confirmed=True).order_by("pk").first()
        model = StaticDevice
    if device is None or not code:
        return Check(None, method)
    return _check(model, device.pk, code, method)


@transaction.atomic
def renew_recovery_codes(user, code: str) -> tuple[Check, list[str]]:
    """Ten new recovery codes for an enrolled user who gives a current code; the old ones stop
    working."""
    check = verify(user, code)
    if not check.passed or not is_enrolled(user):
        return check, []
    return check, _new_recovery_codes(user)


@transaction.atomic
def turn_off(user, code: str) -> Check:
    """Remove the user's authenticator and recovery codes, given a current code. The caller refuses
    first when a widget requires two-factor sign-in."""
    check = verify(user, code)
    if check.passed:
        TOTPDevice.objects.filter(user=user).delete()
        StaticDevice.objects.filter(user=user).delete()
        _record(user, "auth.two_factor_disabled")
    return check


def _record(user, action: str) -> None:
    for agent in access.operator_rows(user):
        audit.record(
            widget=agent.widget,
            action=action,
            target_type="agent",
            target_id=agent.pk,
            actor=audit.agent_actor(agent),
        )
