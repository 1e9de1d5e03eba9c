"""Django admin behind the second factor: a staff user with a device, or whose widget requires
two-factor sign-in, reaches the admin only with a verified session (a code on the admin's sign-in
page, or the console's code step); everyone else signs in with the password as before."""

import pytest
from django.contrib.auth import SESSION_KEY
from django.test import Client
from django_otp.plugins.otp_totp.models import TOTPDevice

from apps.agents.tests.factories import HumanAgentFactory
from apps.console import twofa
from apps.console.tests.test_two_factor import a_later_step, code_of, enrolled
from apps.widget import services as widget_services
from tests.support.factories import UserFactory

pytestmark = pytest.mark.django_db

LOGIN = "/admin/login/"
PASSWORD = "Correct-Horse-42"


@pytest.fixture
def staff():
    user = UserFactory(username="staff@example.com", email="staff@example.com", is_staff=True, is_superuser=True)
    user.set_password(PASSWORD)
    user.save()
    return user


@pytest.fixture
def no_throttle(settings):
    settings.OTP_TOTP_THROTTLE_FACTOR = 0
    settings.OTP_STATIC_THROTTLE_FACTOR = 0


def sign_in(client, username, password=PASSWORD, code=None):
    data = {"username": username, "password": password, "next": "/admin/"}
    if code is not None:
        data["otp_token"] = code
    return client.post(LOGIN, data)


def signed_in(client) -> bool:
    return SESSION_KEY in client.session


def test_without_a_device_or_a_requirement_the_password_is_enough(staff):
    client = Client()
    response = sign_in(client, staff.username)
    assert response.status_code == 302 and client.get("/admin/").status_code == 200


def test_with_a_device_the_admin_needs_a_code(staff, no_throttle):
    device, codes = enrolled(staff)
    client = Client()
    response = sign_in(client, staff.username)
    assert response.status_code == 200 and not signed_in(client)
    assert "Enter the code from your authenticator app" in response.content.decode()
    response = sign_in(client, staff.username, code="000000")
    assert response.status_code == 200 and "That code is not right" in response.content.decode()
    assert not signed_in(client)

    response = sign_in(client, staff.username, code=code_of(device))
    assert response.status_code == 302 and client.get("/admin/").status_code == 200

    a_later_step(device)
    other = Client()
    assert sign_in(other, staff.username, code=codes[0]).status_code == 302  # a recovery code, once
    assert sign_in(Client(), staff.username, code=codes[0]).status_code == 200


def test_a_session_signed_in_before_enrolling_loses_the_admin_until_verified(staff):
    client = Client()
    client.force_login(staff)
    assert client.get("/admin/").status_code == 200
    enrolled(staff)
    response = client.get("/admin/")
    assert response.status_code == 302 and response["Location"].startswith(LOGIN)


def test_a_widgets_requirement_keeps_a_staff_operator_without_a_device_out(staff, widget):
    HumanAgentFactory(widget=widget, user=staff, email=staff.email)
    widget_services.update_settings(widget=widget, body={"require_2fa": True})
    assert twofa.required_for(staff)
    client = Client()
    response = sign_in(client, staff.username)
    assert response.status_code == 200 and not signed_in(client)
    assert "Set up two-factor sign-in in the operator console first" in response.content.decode()
    # a session from before the requirement does not reach the admin either
    old = Client()
    old.force_login(staff)
    assert old.get("/admin/").status_code == 302


def test_the_consoles_code_step_verifies_the_session_for_the_admin_too(staff, widget, no_throttle):
    HumanAgentFactory(widget=widget, user=staff, email=staff.email)
    device, _ = enrolled(staff)
    client = Client()
    client.post("/console/login/", {"email": staff.email, "password": PASSWORD})
    assert client.post("/console/login/code/", {"code": code_of(device)}).status_code == 302
    assert client.get("/admin/").status_code == 200
    assert TOTPDevice.objects.get(pk=device.pk).last_t > 0
