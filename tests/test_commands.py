"""Operator commands: machine-readable output on stdout only; when they cannot act, a non-zero
exit and a one-line reason on stderr (and nothing on stdout)."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from datetime import timedelta

import pytest
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from apps.agents.models import Agent
from apps.core.auth import tokens
from apps.core.models import Account, ApiToken, Widget

pytestmark = pytest.mark.django_db

NOTES = "/api/v1/_test/notes"
# the spec's 43, Wave 3's privacy:write, audit:read, canned:read, canned:write and Wave 4's
# routing:read, routing:write, sla:read, sla:write, campaigns:read, campaigns:write, and team work's
# labels:read, labels:write, macros:read, macros:write, automation:read, automation:write
OPERATIONAL_SCOPE_COUNT = 59
# The spec's presets (core-specification, Authentication), written out rather than imported.
AI_SETUP = {
    "widget:read",
    "widget:write",
    "ai:read",
    "ai:write",
    "ai:apply",
    "kb:read",
    "kb:write",
    "files:write",
    "stats:read",
}
SUPPORT_AGENTS = {"support:read", "support:reply", "support:write"}


def run(name: str, *args: str) -> str:
    """Run a command that succeeds; its stdout."""
    out = io.StringIO()
    call_command(name, *args, stdout=out)
    return out.getvalue()


def run_failing(capsys, name: str, *args: str) -> tuple[str, str]:
    """Run a command that must fail; (its stdout, its one-line stderr)."""
    out = io.StringIO()
    with pytest.raises(SystemExit) as caught:
        call_command(name, *args, stdout=out)
    assert caught.value.code not in (0, None)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return out.getvalue(), lines[0]


def one_json_line(output: str) -> dict:
    lines = output.strip().splitlines()
    assert len(lines) == 1, output
    return json.loads(lines[0])


def issued_token(output: str) -> ApiToken:
    plaintext = output.strip()
    assert output.strip().splitlines() == [plaintext]
    assert tokens.is_well_formed(plaintext), plaintext
    return ApiToken.objects.get(prefix=plaintext[: tokens.PREFIX_LENGTH])


def authenticates(plaintext: str) -> bool:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    return client.get(NOTES).status_code == 200


# --- create_widget ---------------------------------------------------------------------------------------


def test_create_widget_prints_one_json_line_of_ids():
    # when
    data = one_json_line(run("create_widget", "--owner-email", "a@example.com", "--name", "Shop", "--enable-api"))

    # then
    assert set(data) == {"account_id", "widget_id", "button_guid", "owner_agent_id"}
    widget = Widget.objects.get(pk=data["widget_id"])
    assert widget.account_id == data["account_id"]
    assert widget.account.user.email == "a@example.com"
    assert widget.name == "Shop"
    assert widget.api_enabled
    assert re.fullmatch(r"[0-9a-f]{32}", data["button_guid"])
    assert widget.button_guid == data["button_guid"]


def test_create_widget_makes_the_owner_a_human_owner_agent_of_that_widget():
    # when
    data = one_json_line(run("create_widget", "--owner-email", "a@example.com", "--name", "Shop"))

    # then
    owner = Agent.objects.get(pk=data["owner_agent_id"])
    assert owner.widget_id == data["widget_id"]
    assert owner.type == Agent.Type.HUMAN
    assert owner.is_owner
    assert owner.user.email == "a@example.com"
    assert list(Agent.objects.filter(widget_id=data["widget_id"])) == [owner]


def test_create_widget_without_enable_api_leaves_the_api_off():
    data = one_json_line(run("create_widget", "--owner-email", "a@example.com"))
    assert not Widget.objects.get(pk=data["widget_id"]).api_enabled


def test_create_widget_reuses_the_account_of_the_same_email():
    # given
    first = one_json_line(run("create_widget", "--owner-email", "a@example.com", "--name", "Shop"))

    # when
    second = one_json_line(run("create_widget", "--owner-email", "a@example.com", "--name", "Blog"))

    # then one account owns two widgets, each with its own owner agent
    assert second["account_id"] == first["account_id"]
    assert second["widget_id"] != first["widget_id"]
    assert second["owner_agent_id"] != first["owner_agent_id"]
    assert Account.objects.count() == 1
    assert Widget.objects.filter(account_id=first["account_id"]).count() == 2


def test_create_widget_matches_the_email_case_insensitively():
    first = one_json_line(run("create_widget", "--owner-email", "a@example.com"))
    second = one_json_line(run("create_widget", "--owner-email", "A@Example.COM"))
    assert second["account_id"] == first["account_id"]


@pytest.mark.parametrize("email", ["not-an-email", "a@", "", "a b@example.com"])
def test_create_widget_with_an_invalid_email_fails_and_creates_nothing(capsys, email):
    # when
    out, reason = run_failing(capsys, "create_widget", "--owner-email", email)

    # then
    assert out == ""
    assert "owner-email" in reason
    assert not Widget.objects.exists()
    assert not Account.objects.exists()


# --- issue_token -------------------------------------------------------------------------------------------


def test_issue_token_all_grants_every_operational_scope(widget):
    # when
    token = issued_token(run("issue_token", "--widget", str(widget.pk), "--scopes", "all"))

    # then
    assert token.widget == widget
    assert len(token.scopes) == OPERATIONAL_SCOPE_COUNT == len(set(token.scopes))
    assert "partners:withdraw" not in token.scopes
    assert SUPPORT_AGENTS <= set(token.scopes)


def test_issue_token_by_button_guid_with_the_ai_setup_preset(widget):
    token = issued_token(run("issue_token", "--widget", widget.button_guid, "--preset", "ai-setup"))
    assert token.widget == widget
    assert set(token.scopes) == AI_SETUP and len(token.scopes) == 9


def test_issue_token_with_the_support_agents_preset(widget):
    token = issued_token(run("issue_token", "--widget", str(widget.pk), "--preset", "support-agents"))
    assert set(token.scopes) == SUPPORT_AGENTS and len(token.scopes) == 3


def test_issue_token_with_listed_scopes(widget):
    token = issued_token(run("issue_token", "--widget", str(widget.pk), "--scopes", "chats:read, stats:read"))
    assert sorted(token.scopes) == ["chats:read", "stats:read"]


def test_issue_token_with_an_unknown_scope_fails_naming_it(capsys, widget):
    # when
    out, reason = run_failing(capsys, "issue_token", "--widget", str(widget.pk), "--scopes", "chats:read,chats:fly")

    # then
    assert out == ""
    assert "chats:fly" in reason
    assert not ApiToken.objects.exists()


@pytest.mark.parametrize("ref", ["999999", "0" * 32, "no-such-widget"])
def test_issue_token_for_an_unknown_widget_fails(capsys, ref):
    out, reason = run_failing(capsys, "issue_token", "--widget", ref, "--scopes", "all")
    assert out == ""
    assert ref in reason
    assert not ApiToken.objects.exists()


def test_issue_token_for_a_widget_ref_that_only_looks_numeric_fails_cleanly(capsys, widget):
    # given "²": str.isdigit() says yes, int() says no; neither an id nor a button_guid
    out, reason = run_failing(capsys, "issue_token", "--widget", "²", "--scopes", "all")

    # then the usual refusal, not a traceback
    assert out == ""
    assert "²" in reason
    assert not ApiToken.objects.exists()


def test_issue_token_with_expires_in_sets_the_expiry(widget):
    # given
    before = timezone.now()

    # when
    token = issued_token(run("issue_token", "--widget", str(widget.pk), "--scopes", "all", "--expires-in", "60"))

    # then
    after = timezone.now()
    assert before + timedelta(seconds=60) <= token.expires_at <= after + timedelta(seconds=60)


def test_issue_token_without_expires_in_does_not_expire(widget):
    token = issued_token(run("issue_token", "--widget", str(widget.pk), "--scopes", "all"))
    assert token.expires_at is None


@pytest.mark.parametrize("seconds", ["0", "-5"])
def test_issue_token_with_a_non_positive_expiry_fails(capsys, widget, seconds):
    out, _ = run_failing(capsys, "issue_token", "--widget", str(widget.pk), "--scopes", "all", "--expires-in", seconds)
    assert out == ""
    assert not ApiToken.objects.exists()


def test_issued_token_authenticates(widget):
    # given
    plaintext = run("issue_token", "--widget", str(widget.pk), "--scopes", "chats:read").strip()

    # when / then
    assert authenticates(plaintext)


def test_issue_token_stores_only_the_hash(widget):
    plaintext = run("issue_token", "--widget", str(widget.pk), "--scopes", "all").strip()
    token = issued_token(plaintext)
    assert token.secret_hash == tokens.hash_token(plaintext)
    assert plaintext not in (token.name, token.prefix, token.secret_hash)


# --- create_agent ------------------------------------------------------------------------------------------


def test_create_agent_prints_the_agent_and_user_ids(widget):
    # when
    data = one_json_line(run("create_agent", "--widget", str(widget.pk), "--email", "b@example.com", "--name", "Bob"))

    # then a human operator of that widget
    assert set(data) == {"agent_id", "user_id"}
    agent = Agent.objects.get(pk=data["agent_id"])
    assert agent.widget == widget
    assert agent.user_id == data["user_id"]
    assert agent.type == Agent.Type.HUMAN
    assert not agent.is_owner
    assert (agent.name, agent.email) == ("Bob", "b@example.com")


def test_create_agent_by_button_guid(widget):
    data = one_json_line(
        run("create_agent", "--widget", widget.button_guid, "--email", "b@example.com", "--name", "Bob")
    )
    assert Agent.objects.get(pk=data["agent_id"]).widget == widget


def test_create_agent_twice_is_idempotent(widget):
    # given
    args = ("--widget", str(widget.pk), "--email", "b@example.com", "--name", "Bob")
    first = one_json_line(run("create_agent", *args))

    # when
    second = one_json_line(run("create_agent", *args))

    # then
    assert second == first
    assert Agent.objects.filter(widget=widget, email="b@example.com").count() == 1


@pytest.mark.parametrize(
    "args",
    [
        ("--widget", "999999", "--email", "b@example.com", "--name", "Bob"),
        ("--widget", "WIDGET", "--email", "nope", "--name", "Bob"),
        ("--widget", "WIDGET", "--email", "b@example.com", "--name", "  "),
    ],
    ids=["unknown-widget", "invalid-email", "blank-name"],
)
def test_create_agent_that_cannot_act_fails_and_creates_nothing(capsys, widget, args):
    args = tuple(str(widget.pk) if a == "WIDGET" else a for a in args)
    out, _ = run_failing(capsys, "create_agent", *args)
    assert out == ""
    assert not Agent.objects.filter(email="b@example.com").exists()


# --- seed_demo ----------------------------------------------------------------------------------------------


def test_seed_demo_twice_makes_one_demo_widget_with_the_api_enabled():
    # when
    first = one_json_line(run("seed_demo"))
    second = one_json_line(run("seed_demo"))

    # then
    assert second["widget_id"] == first["widget_id"]
    assert second["account_id"] == first["account_id"]
    assert Widget.objects.count() == 1
    assert Widget.objects.get(pk=first["widget_id"]).api_enabled


def test_seed_demo_prints_a_working_token_on_every_run():
    # when
    first = one_json_line(run("seed_demo"))
    second = one_json_line(run("seed_demo"))

    # then both tokens work, and each is new
    assert first["token"] != second["token"]
    for data in (first, second):
        assert tokens.is_well_formed(data["token"])
        assert data["token_prefix"] == data["token"][: tokens.PREFIX_LENGTH]
        assert authenticates(data["token"])


# --- from the command line --------------------------------------------------------------------------------


def manage(*args: str) -> subprocess.CompletedProcess:
    """`python manage.py ...` as an operator runs it (no database is reached by these cases)."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    "args",
    [
        ("issue_token", "--widget", "1"),
        ("issue_token", "--widget", "1", "--scopes", "all", "--expires-in", "soon"),
        ("create_widget",),
    ],
    ids=["missing-scopes", "non-integer-expiry", "missing-owner-email"],
)
def test_usage_error_exits_non_zero_with_one_line_on_stderr(args):
    # when an operator mistypes the arguments
    done = manage(*args)

    # then: the rule of every operator command, usage errors included
    assert done.returncode != 0
    assert done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


# --- set_plan -----------------------------------------------------------------------------------------------


def test_the_plans_free_pro_and_business_are_seeded_with_free_the_default():
    from apps.billing.models import Plan

    plans = {plan.slug: plan for plan in Plan.objects.filter(slug__in=["free", "pro", "business"])}
    assert set(plans) == {"free", "pro", "business"}
    assert plans["free"].is_default and not plans["free"].is_paid and plans["free"].seats == 3
    assert plans["pro"].is_paid and plans["pro"].seats == 10 and plans["pro"].ad_cabinet_slots == 2
    assert {"messengers", "ai"} <= set(plans["pro"].paid_features) and plans["pro"].premium_skins
    assert plans["business"].is_paid and plans["business"].seats == 50 and plans["business"].ad_cabinet_slots == 10


def test_set_plan_puts_the_account_on_the_plan_and_prints_it(widget):
    from apps.billing import selectors

    data = one_json_line(run("set_plan", "--widget", widget.button_guid, "--plan", "pro"))

    assert data == {"account_id": widget.account_id, "plan": "pro"}
    assert selectors.plan_for(widget.account).slug == "pro" and selectors.seats_for(widget.account) == 10


def test_set_plan_refuses_an_unknown_plan_or_widget(capsys, widget):
    _, reason = run_failing(capsys, "set_plan", "--widget", str(widget.pk), "--plan", "gold")
    assert "no plan 'gold'" in reason and "business" in reason
    _, reason = run_failing(capsys, "set_plan", "--widget", "999999", "--plan", "pro")
    assert "no widget" in reason


# --- what Django admin shows -----------------------------------------------------------------------------


def test_admin_names_every_model_and_app_in_plain_words():
    from django.apps import apps

    ours = [config for config in apps.get_app_configs() if config.name.startswith("apps.")]
    for model in (model for config in ours for model in config.get_models()):
        plural = str(model._meta.verbose_name_plural)
        # Django adds an "s": "deliverys", "settingss", "factss" are the words it makes unasked
        assert not plural.endswith(("ys", "ss")) or plural.endswith(("days", "keys", "ways")), model
        assert not plural.startswith("ai "), model  # admin would show "Ai": the product writes "AI"
    for config in ours:
        assert "_" not in str(config.verbose_name), config.label
