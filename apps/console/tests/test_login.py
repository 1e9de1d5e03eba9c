"""Signing in and out of the console: e-mail and password, operators only, one answer for every
failure, CSRF, a rate limit, and the `create_agent --password` that sets the password."""

import io

import pytest
from django.contrib.auth import SESSION_KEY
from django.core.management import call_command
from django.test import Client

from apps.agents.models import Agent
from apps.console import account_views as views
from tests.support.factories import UserFactory

from .conftest import PASSWORD

pytestmark = pytest.mark.django_db

LOGIN = "/console/login/"


def sign_in(client, email, password, **extra):
    return client.post(LOGIN, {"email": email, "password": password, **extra})


def test_the_login_page_asks_for_the_email_and_the_password():
    response = Client().get(LOGIN)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'name="email"' in html and 'name="password"' in html and "csrfmiddlewaretoken" in html
    assert '<label for="id_email">E-mail</label>' in html


def test_an_operator_signs_in_with_email_and_password(operator):
    client = Client()
    response = sign_in(client, "OLGA@example.com", PASSWORD)
    assert response.status_code == 302 and response["Location"] == "/console/"
    assert int(client.session[SESSION_KEY]) == operator.user_id
    assert client.get("/console/").status_code == 200


def test_sign_in_and_out_are_in_the_agent_event_log(operator):
    from apps.agents.events_log import code_of
    from apps.agents.models import AgentEvent

    client = Client()
    sign_in(client, operator.email, PASSWORD)
    client.post("/console/logout/")
    codes = list(AgentEvent.objects.filter(agent=operator).order_by("pk").values_list("type_code", flat=True))
    assert codes == [code_of("console_login"), code_of("console_logout")]


def test_next_is_followed_inside_the_console_only(operator):
    assert sign_in(Client(), operator.email, PASSWORD, next="/console/chats/5/")["Location"] == "/console/chats/5/"
    assert sign_in(Client(), operator.email, PASSWORD, next="https://evil.example/")["Location"] == "/console/"
    assert sign_in(Client(), operator.email, PASSWORD, next="/admin/")["Location"] == "/console/"


@pytest.mark.parametrize("case", ["wrong password", "unknown e-mail", "not an operator", "banned", "inactive"])
def test_every_failed_sign_in_reads_the_same(operator, case):
    email, password = operator.email, PASSWORD
    if case == "wrong password":
        password = "nope-nope-nope"
    elif case == "unknown e-mail":
        email = "nobody@example.com"
    elif case == "not an operator":
        user = UserFactory(username="plain@example.com", email="plain@example.com")
        user.set_password(PASSWORD)
        user.save()
        email = "plain@example.com"
    elif case == "banned":
        Agent.objects.filter(pk=operator.pk).update(status=Agent.Status.BANNED)
    else:
        operator.user.is_active = False
        operator.user.save()
    client = Client()
    response = sign_in(client, email, password)
    assert response.status_code == 401
    assert str(views.FAILED_LOGIN) in response.content.decode()
    assert SESSION_KEY not in client.session


def test_a_malformed_email_is_a_form_error(operator):
    response = sign_in(Client(), "not-an-email", PASSWORD)
    assert response.status_code == 400
    assert "Enter a valid email address." in response.content.decode()


def test_sign_in_needs_the_csrf_token(operator):
    client = Client(enforce_csrf_checks=True)
    assert sign_in(client, operator.email, PASSWORD).status_code == 403
    page = client.get(LOGIN)
    token = page.context["csrf_token"]
    assert sign_in(client, operator.email, PASSWORD, csrfmiddlewaretoken=token).status_code == 302


def test_sign_in_is_rate_limited_per_address_and_email(operator):
    for _ in range(views.LOGIN.by_address_name.limit):
        assert sign_in(Client(), operator.email, "wrong-wrong-wrong").status_code == 401
    response = sign_in(Client(), operator.email, PASSWORD)
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert "Too many sign-in attempts" in response.content.decode()


def test_wrong_passwords_from_one_address_do_not_lock_the_owner_out_elsewhere(operator):
    attacker = Client(REMOTE_ADDR="203.0.113.66")
    for _ in range(views.LOGIN.by_address_name.limit):
        assert sign_in(attacker, operator.email, "wrong-wrong-wrong").status_code == 401
    assert sign_in(attacker, operator.email, PASSWORD).status_code == 429
    owner = Client(REMOTE_ADDR="198.51.100.7")
    assert sign_in(owner, operator.email, PASSWORD).status_code == 302


def test_a_guess_spread_over_many_addresses_is_slowed_per_email(operator):
    per_address = views.LOGIN.by_address_name.limit
    for n in range(views.LOGIN.by_name.limit):
        sign_in(Client(REMOTE_ADDR=f"203.0.{n // per_address}.{n % per_address + 1}"), operator.email, "wrong-wrong")
    response = sign_in(Client(REMOTE_ADDR="198.51.100.7"), operator.email, PASSWORD)
    assert response.status_code == 429 and int(response["Retry-After"]) > 0


def test_sign_in_is_rate_limited_per_address(operator):
    for n in range(views.LOGIN.by_address.limit):
        sign_in(Client(), f"someone{n}@example.com", "wrong-wrong-wrong")
    assert sign_in(Client(), operator.email, PASSWORD).status_code == 429


def test_sign_out_ends_the_session(console):
    response = console.post("/console/logout/")
    assert response.status_code == 302 and response["Location"] == LOGIN
    assert console.get("/console/")["Location"].startswith(LOGIN)


def test_sign_out_is_a_post(console):
    assert console.get("/console/logout/").status_code == 405


def test_a_signed_in_user_who_lost_the_operator_row_is_signed_out(console, operator):
    Agent.objects.filter(pk=operator.pk).update(status=Agent.Status.BANNED)
    response = console.get("/console/")
    assert response.status_code == 302 and response["Location"].startswith(LOGIN)
    assert SESSION_KEY not in console.session


def test_a_signed_in_user_who_never_was_an_operator_keeps_the_session(db):
    # given a signed-in user of the Django admin (staff) who has no agent row
    user = UserFactory(username="staff@example.com", email="staff@example.com", is_staff=True)
    client = Client()
    client.force_login(user)
    # when another site sends the browser to a console page (a link, a top-level navigation: a GET)
    response = client.get("/console/")
    # then the console asks for an operator's sign-in, and the user's session is not ended by a GET
    assert response.status_code == 302 and response["Location"].startswith(LOGIN)
    assert int(client.session[SESSION_KEY]) == user.pk


def test_create_agent_password_lets_the_agent_sign_in(widget):
    out = io.StringIO()
    call_command(
        "create_agent",
        "--widget",
        str(widget.pk),
        "--email",
        "ivan@example.com",
        "--name",
        "Ivan",
        "--password",
        "Blue-Lantern-77",
        stdout=out,
    )
    assert sign_in(Client(), "ivan@example.com", "Blue-Lantern-77").status_code == 302


def test_create_agent_password_on_an_existing_agent_sets_it(operator, widget):
    call_command(
        "create_agent",
        "--widget",
        str(widget.pk),
        "--email",
        operator.email,
        "--name",
        "Olga",
        "--password",
        "Another-Secret-91",
        stdout=io.StringIO(),
    )
    assert Agent.objects.filter(widget=widget, email=operator.email).count() == 1
    assert sign_in(Client(), operator.email, "Another-Secret-91").status_code == 302
    assert sign_in(Client(), operator.email, PASSWORD).status_code == 401


def test_create_agent_refuses_a_weak_password_and_creates_nothing(widget, capsys):
    with pytest.raises(SystemExit) as caught:
        call_command(
            "create_agent",
            "--widget",
            str(widget.pk),
            "--email",
            "weak@example.com",
            "--name",
            "W",
            "--password",
            "123",
            stdout=io.StringIO(),
        )
    assert caught.value.code != 0
    assert capsys.readouterr().err.startswith("invalid --password:")
    assert not Agent.objects.filter(email="weak@example.com").exists()


def test_create_agent_without_password_leaves_the_invitation_way(widget):
    call_command(
        "create_agent",
        "--widget",
        str(widget.pk),
        "--email",
        "nopass@example.com",
        "--name",
        "N",
        stdout=io.StringIO(),
    )
    agent = Agent.objects.get(email="nopass@example.com")
    assert not agent.user.has_usable_password()
