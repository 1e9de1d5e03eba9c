"""Two-factor sign-in in the console: enrolment from the account page, the code step after the
password, a right, a wrong and a reused code, recovery codes once each, `require_2fa` forcing
enrolment, turning it off, the rate limit and django-otp's throttle, and the audit rows with the
address and the method."""

import re
import time

import pytest
from django.contrib.auth import SESSION_KEY
from django.test import Client
from django_otp.oath import TOTP
from django_otp.plugins.otp_static.models import StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice

from apps.agents.tests.factories import HumanAgentFactory
from apps.audit.models import AuditEntry
from apps.console import signin, twofa
from apps.widget.tests.conftest import patch

from .conftest import PASSWORD

pytestmark = pytest.mark.django_db

LOGIN = "/console/login/"
CODE = "/console/login/code/"
ENROL = "/console/login/enrol/"
ACCOUNT = "/console/account/two-factor/"
ACCOUNT_ENROL = "/console/account/two-factor/enrol/"
CODES = "/console/account/two-factor/recovery-codes/"
NEW_CODES = "/console/account/two-factor/recovery-codes/new/"
OFF = "/console/account/two-factor/off/"


def code_of(device, *, at=None) -> str:
    totp = TOTP(device.bin_key, device.step, device.t0, device.digits, device.drift)
    totp.time = time.time() if at is None else at
    return f"{totp.token():06d}"


def a_later_step(device) -> None:
    """As if the last accepted code were minutes old: the current code is fresh again."""
    TOTPDevice.objects.filter(pk=device.pk).update(last_t=-1)


def enrolled(user) -> tuple[TOTPDevice, list[str]]:
    """`user` with a confirmed authenticator and ten recovery codes (through the service)."""
    device = twofa.start_enrolment(user)
    check, codes = twofa.confirm_enrolment(user, code_of(device), device_id=device.pk)
    assert check.passed and len(codes) == 10
    a_later_step(device)
    return TOTPDevice.objects.get(pk=device.pk), codes


def password_step(client, email, **extra):
    return client.post(LOGIN, {"email": email, "password": PASSWORD, **extra}, REMOTE_ADDR="203.0.113.7")


def signed_in_as(client) -> int | None:
    value = client.session.get(SESSION_KEY)
    return int(value) if value is not None else None


def rows(action, **filters):
    return list(AuditEntry.objects.filter(action=action, **filters).order_by("pk"))


def require_2fa(api, widget, on=True):
    response = patch(api(w=widget), {"require_2fa": on})
    assert response.status_code == 200, response.content
    assert response.json()["data"]["require_2fa"] is on


@pytest.fixture
def no_throttle(settings):
    """django-otp's doubling wait after a wrong code off, for tests about the other rules."""
    settings.OTP_TOTP_THROTTLE_FACTOR = 0
    settings.OTP_STATIC_THROTTLE_FACTOR = 0


# --- without a device ------------------------------------------------------------------------------------


def test_without_two_factor_the_password_signs_in_and_is_audited_with_the_address(operator, widget):
    client = Client()
    response = password_step(client, operator.email)
    assert response.status_code == 302 and response["Location"] == "/console/"
    assert signed_in_as(client) == operator.user_id
    [row] = rows("auth.signed_in")
    assert row.widget_id == widget.pk and row.target_type == "agent" and row.target_id == str(operator.pk)
    assert (row.actor_type, row.actor_id) == ("agent", str(operator.pk))
    assert row.changes == {"address": {"from": None, "to": "203.0.113.7"}, "method": {"from": None, "to": "password"}}


def test_a_wrong_password_for_an_operator_leaves_a_row_per_widget_and_an_unknown_email_none(operator, other_widget):
    HumanAgentFactory(widget=other_widget, user=operator.user, email=operator.email)
    Client().post(LOGIN, {"email": operator.email.upper(), "password": "wrong"}, REMOTE_ADDR="198.51.100.4")
    Client().post(LOGIN, {"email": "nobody@example.com", "password": "wrong"})
    failed = rows("auth.sign_in_failed")
    assert len(failed) == 2 and {row.widget_id for row in failed} == {operator.widget_id, other_widget.pk}
    assert all(row.actor_type == "system" for row in failed)
    assert failed[0].changes == {
        "address": {"from": None, "to": "198.51.100.4"},
        "method": {"from": None, "to": "password"},
        "reason": {"from": None, "to": "bad_credentials"},
    }


def test_the_address_is_the_proxys_view_of_the_client(operator, settings):
    settings.TRUSTED_PROXY_HOPS = 1
    Client().post(LOGIN, {"email": operator.email, "password": PASSWORD}, HTTP_X_FORWARDED_FOR="192.0.2.55")
    assert rows("auth.signed_in")[0].changes["address"]["to"] == "192.0.2.55"


# --- enrolment from the account page ---------------------------------------------------------------------


def test_the_account_page_enrols_with_a_qr_code_and_shows_ten_recovery_codes_once(console, operator):
    page = console.get(ACCOUNT).content.decode()
    assert "Two-factor sign-in is off" in page and ACCOUNT_ENROL in page
    enrol = console.get(ACCOUNT_ENROL)
    html = enrol.content.decode()
    assert enrol.status_code == 200 and 'class="qr"' in html
    device = TOTPDevice.objects.get(user=operator.user, confirmed=False)
    assert twofa.secret_text(device) in html
    assert console.get(ACCOUNT_ENROL).content.decode().count(twofa.secret_text(device)) == 1  # the same secret again

    response = console.post(ACCOUNT_ENROL, {"code": code_of(device)})
    assert response.status_code == 303 and response["Location"] == CODES
    shown = console.get(CODES).content.decode()
    codes = re.findall(r'<li><code dir="ltr">([a-z2-7]{8})</code></li>', shown)
    assert len(set(codes)) == 10
    assert set(StaticToken.objects.filter(device__user=operator.user).values_list("token", flat=True)) == set(codes)
    again = console.get(CODES)
    assert again.status_code == 303 and again["Location"] == ACCOUNT  # shown once
    assert "Two-factor sign-in is on" in console.get(ACCOUNT).content.decode()
    assert TOTPDevice.objects.get(user=operator.user).confirmed
    [row] = rows("auth.two_factor_enabled")
    assert (row.actor_type, row.actor_id, row.target_id) == ("agent", str(operator.pk), str(operator.pk))


def test_a_secret_shown_in_one_session_is_not_the_one_another_session_confirms(console, operator):
    console.get(ACCOUNT_ENROL)
    seen = TOTPDevice.objects.get(user=operator.user, confirmed=False)
    other = Client()
    other.force_login(operator.user)
    other.get(ACCOUNT_ENROL)
    assert not TOTPDevice.objects.filter(pk=seen.pk).exists()  # replaced by the other session's
    response = console.post(ACCOUNT_ENROL, {"code": code_of(seen)})
    assert response.status_code == 401 and not twofa.is_enrolled(operator.user)


def test_a_wrong_code_enrols_nothing(console, operator):
    console.get(ACCOUNT_ENROL)
    response = console.post(ACCOUNT_ENROL, {"code": "000000"})
    assert response.status_code == 401 and "That code is not right" in response.content.decode()
    assert not twofa.is_enrolled(operator.user) and not StaticToken.objects.exists()


# --- the code step -----------------------------------------------------------------------------------------


def test_with_a_device_the_password_leads_to_the_code_step_and_a_right_code_signs_in(operator, widget):
    device, _ = enrolled(operator.user)
    client = Client()
    response = password_step(client, operator.email, next="/console/mentions/")
    assert response.status_code == 302 and response["Location"] == CODE
    assert signed_in_as(client) is None
    assert client.get("/console/").status_code == 302  # the console is not open yet
    assert "authenticator app" in client.get(CODE).content.decode()

    response = client.post(CODE, {"code": code_of(device)}, REMOTE_ADDR="203.0.113.7")
    assert response.status_code == 302 and response["Location"] == "/console/mentions/"
    assert signed_in_as(client) == operator.user_id
    assert client.get("/console/").status_code == 200
    [row] = rows("auth.signed_in")
    assert row.widget_id == widget.pk
    assert row.changes == {
        "address": {"from": None, "to": "203.0.113.7"},
        "method": {"from": None, "to": "totp"},
        "first_factor": {"from": None, "to": "password"},
    }


def test_a_wrong_code_is_refused_and_audited(operator):
    enrolled(operator.user)
    client = Client()
    password_step(client, operator.email)
    response = client.post(CODE, {"code": "123456"}, REMOTE_ADDR="203.0.113.9")
    assert response.status_code == 401
    assert "That code is not right" in response.content.decode() and signed_in_as(client) is None
    [row] = rows("auth.sign_in_failed")
    assert row.changes["method"]["to"] == "totp" and row.changes["reason"]["to"] == "wrong_code"
    assert row.changes["address"]["to"] == "203.0.113.9"


def test_a_used_code_is_refused_the_second_time(operator, no_throttle):
    device, _ = enrolled(operator.user)
    code = code_of(device)
    first = Client()
    password_step(first, operator.email)
    assert first.post(CODE, {"code": code}).status_code == 302
    second = Client()
    password_step(second, operator.email)
    response = second.post(CODE, {"code": code})
    assert response.status_code == 401 and signed_in_as(second) is None


def test_each_recovery_code_works_once(operator, no_throttle):
    _, codes = enrolled(operator.user)
    first = Client()
    password_step(first, operator.email)
    response = first.post(CODE, {"code": codes[0].upper()[:4] + "-" + codes[0][4:]})  # as printed, any case
    assert response.status_code == 302 and signed_in_as(first) == operator.user_id
    assert rows("auth.signed_in")[0].changes["method"]["to"] == "recovery_code"
    assert twofa.recovery_codes_left(operator.user) == 9

    second = Client()
    password_step(second, operator.email)
    response = second.post(CODE, {"code": codes[0]})
    assert response.status_code == 401 and "recovery code is not right" in response.content.decode()
    assert rows("auth.sign_in_failed")[0].changes["method"]["to"] == "recovery_code"
    assert second.post(CODE, {"code": codes[1]}).status_code == 302


def test_the_code_step_expires(operator, monkeypatch):
    device, _ = enrolled(operator.user)
    client = Client()
    password_step(client, operator.email)
    later = time.time() + signin.PENDING_SECONDS + 1
    monkeypatch.setattr(signin.time, "time", lambda: later)
    response = client.post(CODE, {"code": code_of(device)})
    assert response.status_code == 302 and response["Location"] == LOGIN and signed_in_as(client) is None
    assert "took too long" in client.get(LOGIN).content.decode()


def test_the_code_step_without_a_password_first_goes_to_the_sign_in_page(operator):
    enrolled(operator.user)
    assert Client().get(CODE)["Location"] == LOGIN
    assert Client().post(CODE, {"code": "123456"})["Location"] == LOGIN


# --- the limits --------------------------------------------------------------------------------------------


def test_code_attempts_are_rate_limited_per_user(operator, no_throttle):
    device, _ = enrolled(operator.user)
    client = Client()
    password_step(client, operator.email)
    for _ in range(signin.CODES_BY_USER.limit):
        assert client.post(CODE, {"code": "000000"}).status_code == 401
    response = client.post(CODE, {"code": code_of(device)})  # even the right one, past the limit
    assert response.status_code == 429 and int(response["Retry-After"]) > 0
    assert "Too many codes tried" in response.content.decode() and signed_in_as(client) is None
    # from another address too: the budget is the user's
    other = Client()
    password_step(other, operator.email)
    assert other.post(CODE, {"code": code_of(device)}, REMOTE_ADDR="192.0.2.99").status_code == 429


def test_after_a_wrong_code_django_otp_makes_the_next_one_wait(operator, settings):
    settings.OTP_TOTP_THROTTLE_FACTOR = 600
    device, _ = enrolled(operator.user)
    client = Client()
    password_step(client, operator.email)
    assert client.post(CODE, {"code": "000000"}).status_code == 401
    response = client.post(CODE, {"code": code_of(device)})
    assert response.status_code == 429 and "Wait" in response.content.decode() and signed_in_as(client) is None


# --- require_2fa -------------------------------------------------------------------------------------------


def test_require_2fa_makes_an_operator_without_a_device_enrol_before_the_console_opens(
    api, widget, operator, no_throttle
):
    require_2fa(api, widget)
    client = Client()
    response = password_step(client, operator.email, next="/console/mentions/")
    assert response.status_code == 302 and response["Location"] == ENROL
    assert signed_in_as(client) is None and client.get("/console/").status_code == 302
    html = client.get(ENROL).content.decode()
    assert 'class="qr"' in html and "requires two-factor sign-in" in html
    device = TOTPDevice.objects.get(user=operator.user, confirmed=False)
    assert client.post(ENROL, {"code": "000000"}).status_code == 401 and signed_in_as(client) is None

    response = client.post(ENROL, {"code": code_of(device)})
    assert response.status_code == 303 and response["Location"] == CODES
    assert signed_in_as(client) == operator.user_id
    page = client.get(CODES).content.decode()
    assert len(re.findall(r'<code dir="ltr">[a-z2-7]{8}</code>', page)) == 10
    assert 'href="/console/mentions/"' in page
    assert rows("auth.signed_in")[0].changes["method"]["to"] == "totp"


def test_require_2fa_off_by_default_and_another_widgets_setting_changes_nothing(api, operator, other_widget):
    assert patch(api(), {})  # the setting is readable like every other
    require_2fa(api, other_widget)
    client = Client()
    assert password_step(client, operator.email)["Location"] == "/console/"


def test_turning_off_needs_a_current_code_and_is_refused_while_a_widget_requires_it(
    api, widget, operator, console, no_throttle
):
    device, _ = enrolled(operator.user)
    assert console.post(OFF, {"code": "000000"}).status_code == 401 and twofa.is_enrolled(operator.user)
    require_2fa(api, widget)
    response = console.post(OFF, {"code": code_of(device)})
    assert response.status_code == 409 and "requires two-factor sign-in" in response.content.decode()
    assert twofa.is_enrolled(operator.user)
    assert "cannot be turned off" in console.get(ACCOUNT).content.decode()

    require_2fa(api, widget, on=False)
    response = console.post(OFF, {"code": code_of(device)})
    assert response.status_code == 303 and not twofa.is_enrolled(operator.user)
    assert not StaticToken.objects.filter(device__user=operator.user).exists()
    assert [row.target_id for row in rows("auth.two_factor_disabled")] == [str(operator.pk)]
    assert password_step(Client(), operator.email)["Location"] == "/console/"


def test_new_recovery_codes_replace_the_old_ones(console, operator, no_throttle):
    device, old = enrolled(operator.user)
    assert console.post(NEW_CODES, {"code": "000000"}).status_code == 401
    response = console.post(NEW_CODES, {"code": code_of(device)})
    assert response.status_code == 303 and response["Location"] == CODES
    new = re.findall(r'<code dir="ltr">([a-z2-7]{8})</code>', console.get(CODES).content.decode())
    assert len(new) == 10 and not set(new) & set(old)
    assert twofa.verify(operator.user, old[0]).passed is False


def test_the_account_pages_need_a_signed_in_operator():
    for url in (ACCOUNT, ACCOUNT_ENROL, CODES):
        assert Client().get(url).status_code == 302
    for url in (OFF, NEW_CODES):
        assert Client().post(url, {"code": "123456"}).status_code == 302


# --- the setting, in the console's settings page and the REST route -----------------------------------------


def test_the_owner_requires_two_factor_from_the_console_settings_and_it_is_audited(owner_console, owner, widget, api):
    page = owner_console.get("/console/settings/widget/").content.decode()
    advanced = page[page.index('id="section-advanced"') :]
    assert 'name="require_2fa"' in advanced and "Require two-factor sign-in" in advanced
    response = owner_console.post("/console/settings/widget/", {"require_2fa": ["0", "on"]})
    assert response.status_code == 303
    assert api().get("/api/v1/widget/settings").json()["data"]["require_2fa"] is True
    entry = AuditEntry.objects.get(action="widget_settings.changed")
    assert entry.changes == {"require_2fa": {"from": None, "to": True}}
    assert (entry.actor_type, entry.actor_id) == ("agent", str(owner.pk))
    assert twofa.required_for(owner.user)


def test_require_2fa_is_a_strict_boolean_kept_from_visitors(api, widget):
    response = patch(api(), {"require_2fa": "yes"})
    assert response.status_code == 422 and "require_2fa" in response.json()["errors"]
    schema = api().get("/api/v1/widget/settings/schema").json()["data"]["fields"]["require_2fa"]
    assert schema["default"] is False and schema["public"] is False
    require_2fa(api, widget)
    config = Client().get(f"/api/visitor/v1/{widget.button_guid}/config")
    assert config.status_code == 200 and "widget_show_branding" in config.content.decode()
    assert "require_2fa" not in config.content.decode()
