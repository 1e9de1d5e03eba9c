"""`create_external_operator` and `rotate_external_operator_secret`: one JSON line on stdout; a
refusal exits non-zero with one line on stderr and creates nothing."""

from __future__ import annotations

import io
import json

import pytest
from django.contrib.admin.sites import site
from django.core.management import call_command

from apps.agents.models import Agent
from apps.core.crypto import decrypt_secret
from apps.external.models import ExternalOperator
from tests.support.admin import staff_client

pytestmark = pytest.mark.django_db


def run(name: str, *args: str) -> dict:
    out = io.StringIO()
    call_command(name, *args, stdout=out)
    return json.loads(out.getvalue())


def run_failing(capsys, name: str, *args: str) -> str:
    out = io.StringIO()
    with pytest.raises(SystemExit) as caught:
        call_command(name, *args, stdout=out)
    assert caught.value.code not in (0, None) and out.getvalue() == ""
    [line] = capsys.readouterr().err.strip().splitlines()
    return line


def test_create_external_operator_prints_the_operator_and_its_secret_once(widget):
    printed = run(
        "create_external_operator",
        "--widget",
        widget.button_guid,
        "--name",
        "Shop bot",
        "--url",
        "https://127.0.0.1:9/h",
    )
    operator = ExternalOperator.objects.get(public_id=printed["public_id"])
    assert printed == {
        "public_id": operator.public_id,
        "agent_id": operator.agent_id,
        "name": "Shop bot",
        "url": "https://127.0.0.1:9/h",
        "state": "active",
        "signing_secret": printed["signing_secret"],
    }
    assert printed["signing_secret"].startswith("whsec_")
    assert decrypt_secret(operator.endpoint.secret_encrypted) == printed["signing_secret"]
    assert operator.endpoint.secret_encrypted != printed["signing_secret"]  # stored encrypted
    agent = Agent.objects.get(pk=operator.agent_id)
    assert (agent.type, agent.status, agent.widget_id) == ("webhook", "active", widget.pk)


def test_create_external_operator_in_testing_state(widget):
    printed = run(
        "create_external_operator", "--widget", str(widget.pk), "--name", "B", "--url", "https://127.0.0.1:9/h",
        "--state", "testing",
    )  # fmt: skip
    assert printed["state"] == "testing"
    assert Agent.objects.get(pk=printed["agent_id"]).status == "relaxation"


@pytest.mark.parametrize(
    "args",
    [
        ["--name", "B", "--url", "http://127.0.0.1:9/h"],
        ["--name", "B", "--url", "https://10.1.2.3/h"],
        ["--name", " ", "--url", "https://127.0.0.1:9/h"],
        ["--name", "B", "--url", "https://127.0.0.1:9/h", "--secret", "short"],
    ],
)
def test_create_external_operator_refusals_create_nothing(capsys, widget, settings, args):
    line = run_failing(capsys, "create_external_operator", "--widget", widget.button_guid, *args)
    assert line
    assert not ExternalOperator.objects.exists() and not Agent.objects.filter(type="webhook").exists()


def test_create_external_operator_for_an_unknown_widget(capsys):
    assert "no widget" in run_failing(
        capsys, "create_external_operator", "--widget", "nope", "--name", "B", "--url", "https://127.0.0.1:9/h"
    )


def test_rotate_external_operator_secret_keeps_the_old_one_for_the_overlap(widget):
    printed = run(
        "create_external_operator", "--widget", widget.button_guid, "--name", "B", "--url", "https://127.0.0.1:9/h"
    )
    rotated = run("rotate_external_operator_secret", "--operator", printed["public_id"])
    assert rotated["public_id"] == printed["public_id"] and rotated["signing_secret"] != printed["signing_secret"]
    assert rotated["previous_valid_until_seconds"] == 3600
    endpoint = ExternalOperator.objects.get(public_id=printed["public_id"]).endpoint
    assert decrypt_secret(endpoint.secret_encrypted) == rotated["signing_secret"]
    assert decrypt_secret(endpoint.previous_secret_encrypted) == printed["signing_secret"]


def test_rotate_for_an_unknown_operator_fails(capsys):
    assert "no external operator" in run_failing(capsys, "rotate_external_operator_secret", "--operator", "xop_0")


def test_the_admin_registers_external_operators():
    assert ExternalOperator in site._registry


def test_the_admin_changelist_renders(admin_client, widget):
    run("create_external_operator", "--widget", widget.button_guid, "--name", "B", "--url", "https://127.0.0.1:9/h")
    response = admin_client.get("/admin/external/externaloperator/")
    assert response.status_code == 200 and b"xop_" in response.content


def test_the_admin_creates_an_operator_and_shows_its_secret_once(admin_client, widget):
    response = admin_client.post(
        "/admin/external/externaloperator/add/",
        {"widget": widget.pk, "name": "Admin bot", "url": "https://127.0.0.1:9/h", "state": "testing"},
        follow=True,
    )
    assert response.status_code == 200
    operator = ExternalOperator.objects.get(name="Admin bot")
    assert operator.state == "testing" and operator.agent.type == "webhook"
    secret = decrypt_secret(operator.endpoint.secret_encrypted)
    assert secret in response.content.decode()


def test_the_admin_refuses_a_private_url(admin_client, widget):
    response = admin_client.post(
        "/admin/external/externaloperator/add/",
        {"widget": widget.pk, "name": "Bot", "url": "https://10.0.0.1/h", "state": "active"},
    )
    assert response.status_code == 200 and not ExternalOperator.objects.exists()


def test_the_admin_revoke_action_is_the_kill_switch(admin_client, widget):
    printed = run(
        "create_external_operator", "--widget", widget.button_guid, "--name", "B", "--url", "https://127.0.0.1:9/h"
    )
    operator = ExternalOperator.objects.get(public_id=printed["public_id"])
    admin_client.post(
        "/admin/external/externaloperator/", {"action": "revoke", "_selected_action": [operator.pk]}, follow=True
    )
    assert ExternalOperator.objects.get(pk=operator.pk).state == "revoked"


def test_rotate_webhook_keys_reencrypts_operator_secrets_and_their_previous_ones(widget, settings):
    from cryptography.fernet import Fernet

    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.WEBHOOK_SECRET_KEYS = [old]
    printed = run(
        "create_external_operator", "--widget", widget.button_guid, "--name", "B", "--url", "https://127.0.0.1:9/h"
    )
    rotated = run("rotate_external_operator_secret", "--operator", printed["public_id"])
    settings.WEBHOOK_SECRET_KEYS = [new, old]
    assert run("rotate_webhook_keys") == {"rotated": 1}
    settings.WEBHOOK_SECRET_KEYS = [new]
    endpoint = ExternalOperator.objects.get(public_id=printed["public_id"]).endpoint
    assert decrypt_secret(endpoint.secret_encrypted) == rotated["signing_secret"]
    assert decrypt_secret(endpoint.previous_secret_encrypted) == printed["signing_secret"]


STAFF_PERMS = ("add_externaloperator", "change_externaloperator", "view_externaloperator")


def test_the_admin_creates_no_operator_on_another_accounts_widget(widget):
    client = staff_client("external", *STAFF_PERMS)
    response = client.post(
        "/admin/external/externaloperator/add/",
        {"widget": widget.pk, "name": "Bot", "url": "https://127.0.0.1:9/h", "state": "active"},
    )
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    assert not ExternalOperator.objects.exists()


def test_the_admin_creates_an_operator_on_the_own_accounts_widget(widget):
    client = staff_client("external", *STAFF_PERMS, account_of=widget)
    response = client.post(
        "/admin/external/externaloperator/add/",
        {"widget": widget.pk, "name": "Bot", "url": "https://127.0.0.1:9/h", "state": "active"},
    )
    assert response.status_code == 302 and ExternalOperator.objects.get().widget_id == widget.pk


def test_the_admin_neither_lists_nor_revokes_another_accounts_operators(widget, other_widget):
    printed = run(
        "create_external_operator",
        "--widget",
        other_widget.button_guid,
        "--name",
        "B",
        "--url",
        "https://127.0.0.1:9/h",
    )
    operator = ExternalOperator.objects.get(public_id=printed["public_id"])
    client = staff_client("external", *STAFF_PERMS, account_of=widget)
    assert operator.public_id not in client.get("/admin/external/externaloperator/").content.decode()
    client.post("/admin/external/externaloperator/", {"action": "revoke", "_selected_action": [operator.pk]})
    operator.refresh_from_db()
    assert operator.state != ExternalOperator.State.REVOKED
