"""Signing in to Django admin (/admin/login/): the console's sign-in limits, spent before the
password is checked, answered with the admin's 429 page and Retry-After."""

import pytest
from django.contrib.auth import SESSION_KEY
from django.test import Client

from apps.core import admin_site
from tests.support.factories import UserFactory

pytestmark = pytest.mark.django_db

LOGIN = "/admin/login/"
PASSWORD = "Correct-Horse-42"


@pytest.fixture
def staff():
    user = UserFactory(username="staff@example.com", is_staff=True, is_superuser=True)
    user.set_password(PASSWORD)
    user.save()
    return user


def sign_in(client, username, password):
    return client.post(LOGIN, {"username": username, "password": password, "next": "/admin/"})


def signed_in(client) -> bool:
    return SESSION_KEY in client.session


def test_a_correct_sign_in_within_the_limit_works(staff):
    client = Client()
    for _ in range(admin_site.LOGIN.by_address_name.limit - 1):
        assert sign_in(client, staff.username, "wrong-wrong-wrong").status_code == 200
    response = sign_in(client, staff.username, PASSWORD)
    assert response.status_code == 302 and response["Location"] == "/admin/"
    assert signed_in(client)


def test_sign_in_is_rate_limited_per_address_and_username(staff):
    for _ in range(admin_site.LOGIN.by_address_name.limit):
        assert sign_in(Client(), staff.username, "wrong-wrong-wrong").status_code == 200
    client = Client()
    response = sign_in(client, staff.username, PASSWORD)
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert "Too many sign-in attempts" in response.content.decode()
    assert not signed_in(client)


def test_wrong_passwords_from_one_address_do_not_lock_the_owner_out_elsewhere(staff):
    attacker = Client(REMOTE_ADDR="203.0.113.66")
    for _ in range(admin_site.LOGIN.by_address_name.limit):
        assert sign_in(attacker, staff.username, "wrong-wrong-wrong").status_code == 200
    assert sign_in(attacker, staff.username, PASSWORD).status_code == 429
    owner = Client(REMOTE_ADDR="198.51.100.7")
    assert sign_in(owner, staff.username, PASSWORD).status_code == 302
    assert signed_in(owner) and not signed_in(attacker)


def test_the_username_limit_ignores_letter_case(staff):
    for n in range(admin_site.LOGIN.by_address_name.limit):
        name = staff.username.upper() if n % 2 else staff.username
        sign_in(Client(), name, "wrong-wrong-wrong")
    assert sign_in(Client(), staff.username, PASSWORD).status_code == 429


def test_a_guess_spread_over_many_addresses_is_slowed_per_username(staff):
    per_address = admin_site.LOGIN.by_address_name.limit
    for n in range(admin_site.LOGIN.by_name.limit):
        sign_in(Client(REMOTE_ADDR=f"203.0.{n // per_address}.{n % per_address + 1}"), staff.username, "wrong-wrong")
    client = Client(REMOTE_ADDR="198.51.100.7")
    response = sign_in(client, staff.username, PASSWORD)
    assert response.status_code == 429 and int(response["Retry-After"]) > 0
    assert not signed_in(client)


def test_sign_in_is_rate_limited_per_address(staff):
    for n in range(admin_site.LOGIN.by_address.limit):
        sign_in(Client(), f"someone{n}@example.com", "wrong-wrong-wrong")
    client = Client()
    assert sign_in(client, staff.username, PASSWORD).status_code == 429
    assert not signed_in(client)
    elsewhere = Client(REMOTE_ADDR="198.51.100.7")
    assert sign_in(elsewhere, staff.username, PASSWORD).status_code == 302


def test_showing_the_sign_in_page_spends_nothing(staff):
    for _ in range(admin_site.LOGIN.by_address.limit + 1):
        assert Client().get(LOGIN).status_code == 200
    assert sign_in(Client(), staff.username, PASSWORD).status_code == 302


def test_the_admin_site_is_the_rate_limited_one():
    from django.contrib import admin

    assert isinstance(admin.site, admin_site.AdminSite)


@pytest.mark.parametrize("username", ["a" * 240 + "@example.com", "staff\x00@example.com"], ids=["long", "nul"])
def test_a_name_no_bucket_holds_as_it_is_is_counted_not_a_500(settings, username):
    # given the budgets in the database (no Redis), whose bucket names hold 200 characters and no NUL
    settings.REDIS_URL = ""
    # when that name is tried until its limit
    answers = [
        sign_in(Client(), username, "wrong-wrong-wrong").status_code
        for _ in range(admin_site.LOGIN.by_address_name.limit + 1)
    ]
    # then each attempt is a wrong password, and the one past the limit is refused
    assert answers == [200] * admin_site.LOGIN.by_address_name.limit + [429]
