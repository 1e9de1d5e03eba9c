"""/setup/, the first run in the browser: the code the web process prints, 404 without it or once an
account exists, the first account, widget and owner made through the services, the owner signed in;
and /demo/?guid= showing any widget."""

import logging
import threading

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client

from apps.agents.models import Agent
from apps.console import setup
from apps.console.models import SetupCode
from apps.core import services as core_services
from apps.core.models import Account, Widget
from apps.widget import selectors as widget_selectors
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

PASSWORD = "Owner-Setup-Test-76"


def values(**overrides) -> dict:
    return {
        "name": "Olivia",
        "email": "Olivia@Example.com",
        "password": PASSWORD,
        "password2": PASSWORD,
        "widget_name": "Olivia's shop",
        **overrides,
    }


def page(code: str) -> str:
    return f"/setup/?code={code}"


def close_every_account():
    for widget in Widget.objects.all():
        core_services.delete_widget(widget=widget)
    Account.objects.all().delete()


# --- the code ------------------------------------------------------------------------------------


def test_the_start_prints_the_setup_address_with_the_code(caplog):
    with caplog.at_level(logging.WARNING, logger="apps.console.setup"):
        code = setup.announce()
    assert code and len(code) == 32
    lines = [r.getMessage() for r in caplog.records if r.name == "apps.console.setup"]
    assert len(lines) == 1 and f"/setup/?code={code}" in lines[0]


@pytest.mark.django_db(transaction=True)  # the threads' rows are committed: the test's table is emptied after
def test_every_process_prints_the_same_code():
    # given two web processes starting at once on one database (two threads, each its own connection)
    codes, barrier = [], threading.Barrier(2)

    def start():
        barrier.wait()
        codes.append(setup.current_code())

    if connection.vendor == "sqlite":  # the embedded default runs one web process
        codes = [setup.current_code(), setup.current_code()]
    else:
        threads = [threading.Thread(target=start) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(codes) == 2 and codes[0] == codes[1] and SetupCode.objects.count() == 1


def test_nothing_is_printed_once_an_account_exists(widget, caplog):
    with caplog.at_level(logging.WARNING, logger="apps.console.setup"):
        assert setup.announce() is None
    assert "/setup/" not in caplog.text


def test_the_code_depends_on_the_secret_key(settings):
    code = setup.current_code()
    settings.SECRET_KEY = "another-secret-key-of-fifty-characters-or-more-0123456789"
    assert setup.current_code() != code


# --- 404 -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["", "?code=", "?code=0123456789abcdef0123456789abcdef"])
def test_without_the_right_code_the_page_is_404(client, query):
    setup.current_code()
    assert client.get(f"/setup/{query}").status_code == 404
    assert client.post(f"/setup/{query}", values()).status_code == 404
    assert not Account.objects.exists()


def test_once_an_account_exists_the_page_is_404_whatever_the_code(client):
    code = setup.current_code()
    core_services.create_widget(owner_email="someone@example.com")
    assert client.get(page(code)).status_code == 404
    assert client.post(page(code), values()).status_code == 404
    assert Account.objects.count() == 1


# --- the form ------------------------------------------------------------------------------------


def test_the_form_shows_with_the_right_code_under_the_consoles_policy():
    code = setup.current_code()
    response = Client(headers={"accept-language": "ar"}).get(page(code))
    assert response.status_code == 200
    html = response.content.decode()
    assert 'dir="rtl"' in html and 'name="widget_name"' in html and 'type="password"' in html
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert response["Content-Language"] == "ar"


def test_the_first_run_makes_the_account_widget_and_owner_and_signs_the_owner_in(client):
    code = setup.current_code()

    response = client.post(page(code), values())

    assert response.status_code == 200
    account = Account.objects.get()
    widget = Widget.objects.get(account=account)
    owner = Agent.objects.get(widget=widget, user=account.user)
    assert (account.name, account.user.email) == ("Olivia", "olivia@example.com")
    assert widget.name == "Olivia's shop" and widget.api_enabled
    assert widget_selectors.stored_values(widget)["widget_name"] == "Olivia's shop"
    assert owner.role == Agent.Role.OWNER and owner.is_owner and owner.user.check_password(PASSWORD)
    html = response.content.decode()
    assert f"/static/widget/loader.js?guid={widget.button_guid}" in html and 'data-copy="snippet"' in html
    assert f'href="/demo/?guid={widget.button_guid}"' in html
    assert 'href="/console/settings/"' in html and 'href="/console/"' in html
    # the owner is signed in, and the page is closed: the code died with the row
    assert client.get("/console/settings/").status_code == 200
    assert not SetupCode.objects.exists()
    assert client.get(page(code)).status_code == 404


def test_the_owner_signs_in_with_the_password_afterwards(client):
    code = setup.current_code()
    client.post(page(code), values())

    fresh = Client()
    response = fresh.post("/console/login/", {"email": "olivia@example.com", "password": PASSWORD})

    assert response.status_code == 302
    assert fresh.get("/console/settings/").status_code == 200


def test_a_bad_email_shows_the_apis_message_and_changes_nothing(api):
    # the API's answer for the same e-mail (an invitation's address; an account exists for the token)
    body = assert_problem(
        api().post(
            "/api/v1/agents/invitations",
            {"email": "not-an-email"},
            format="json",
            HTTP_X_SERVICE_IDEMPOTENCY_KEY="setup-1",
        ),
        422,
    )
    close_every_account()
    code = setup.current_code()

    response = Client().post(page(code), values(email="not-an-email"))

    assert response.status_code == 422
    assert body["errors"]["email"][0] in response.content.decode()
    assert not Account.objects.exists() and SetupCode.objects.exists()


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"password": "short", "password2": "short"}, "password", "This password is too short."),
        ({"password": "12345678901", "password2": "12345678901"}, "password", "This password is entirely numeric."),
        ({"password2": "Another-Password-1"}, "password2", "The two passwords differ."),
        ({"name": ""}, "name", "This field may not be blank."),
        ({"widget_name": "x" * 61}, "widget_name", "Ensure this field has no more than 60 characters."),
    ],
)
def test_bad_values_are_refused_with_the_rules_messages(client, overrides, field, message):
    code = setup.current_code()
    response = client.post(page(code), values(**overrides))
    assert response.status_code == 422
    assert message in response.content.decode()
    assert not Account.objects.exists() and not Widget.objects.exists()


def test_an_address_a_django_user_has_is_refused(client, django_user_model):
    django_user_model.objects.create_user(username="admin", email="olivia@example.com", password="x")
    code = setup.current_code()
    response = client.post(page(code), values())
    assert response.status_code == 409
    assert "A user with this e-mail exists already" in response.content.decode()
    assert not Account.objects.exists()


def test_a_second_submission_of_the_code_is_404(client):
    code = setup.current_code()
    assert client.post(page(code), values()).status_code == 200
    assert Client().post(page(code), values(email="mallory@example.com")).status_code == 404
    assert Account.objects.count() == 1


# --- the demo page -------------------------------------------------------------------------------


def test_the_demo_page_shows_any_widget_by_its_guid(client, widget):
    response = client.get(f"/demo/?guid={widget.button_guid}")
    assert response.status_code == 200
    assert f"loader.js?guid={widget.button_guid}" in response.content.decode()


@pytest.mark.parametrize("guid", ["", "0" * 32, "x" * 500])
def test_the_demo_page_is_404_for_an_unknown_guid(client, widget, guid):
    call_command("seed_demo", stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert client.get("/demo/", {"guid": guid}).status_code == 404


def test_the_demo_page_without_a_guid_stays_the_seeded_widget(client, widget):
    call_command("seed_demo", stdout=open("/dev/null", "w"))  # noqa: SIM115
    demo = widget_selectors.get_demo_widget()
    html = client.get("/demo/").content.decode()
    assert f"loader.js?guid={demo.button_guid}" in html and widget.button_guid not in html
