"""The support configuration: configure_support and enable_account_link commands, refusals."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from apps.support.config import ConfigInvalid, configure_support
from apps.support.models import SupportConfig
from tests.support.factories import AgentFactory

from .conftest import base_config


def run(*args) -> tuple[int, str, str]:
    out, err = StringIO(), StringIO()
    try:
        call_command(*args, stdout=out, stderr=err)
    except SystemExit as exc:
        return exc.code, out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()


def test_configure_support_prints_the_stored_configuration(widget, capsys):
    agent = AgentFactory(widget=widget)
    config = base_config(operator_agent_id=agent.pk, allowed_tokens=["cwt_AbCdEf12"])
    code, out, _ = run("configure_support", "--widget", str(widget.pk), "--config", json.dumps(config))
    assert code == 0
    printed = json.loads(out)
    assert printed["enabled"] is True and printed["operator_agent_id"] == agent.pk
    assert printed["link_hosts"] == ["shop.ru", "магазин.рф".encode("idna").decode()]
    assert printed["room_reply_limit"] == {"count": 3, "window_sec": 1800}
    assert printed["token_reply_limit"] == {"per_10_min": 20, "per_day": 300}


@pytest.mark.parametrize(
    "missing", ["operator_agent_id", "allowed_tokens", "ip_allowlist"], ids=["no-operator", "no-token", "no-allowlist"]
)
def test_enabling_is_refused_without_operator_token_and_allowlist(widget, missing, capsys):
    agent = AgentFactory(widget=widget)
    config = base_config(operator_agent_id=agent.pk, allowed_tokens=["cwt_AbCdEf12"])
    config[missing] = None if missing == "operator_agent_id" else []
    with pytest.raises(SystemExit) as exc:
        call_command("configure_support", "--widget", str(widget.pk), "--config", json.dumps(config))
    assert exc.value.code == 2
    assert "enabling needs" in capsys.readouterr().err
    assert not SupportConfig.objects.filter(widget=widget).exists()


def test_disabled_configuration_may_be_incomplete(widget):
    stored = configure_support(widget=widget, data={"enabled": False})
    assert stored.enabled is False


@pytest.mark.parametrize(
    "change",
    [
        {"surprise": 1},
        {"operator_agent_id": "12"},
        {"allowed_tokens": ["not-a-prefix"]},
        {"ip_allowlist": ["300.0.0.0/8"]},
        {"ipv4_literals": ["1.2.3"]},
        {"link_hosts": ["https://shop.ru"]},
        {"exact_links": ["http://shop.ru/x"]},
        {"channels": ["vk"]},
        {"room_reply_limit": {"count": 0, "window_sec": 1800}},
        {"room_reply_limit": {"count": 31, "window_sec": 1800}},
        {"token_reply_limit": {"per_10_min": -1, "per_day": 300}},
        {"emails": ["nobody"]},
    ],
)
def test_invalid_entries_are_refused_whole(widget, change):
    agent = AgentFactory(widget=widget)
    config = {**base_config(operator_agent_id=agent.pk, allowed_tokens=["cwt_AbCdEf12"]), **change}
    with pytest.raises(ConfigInvalid):
        configure_support(widget=widget, data=config)
    assert not SupportConfig.objects.filter(widget=widget).exists()


def test_an_operator_of_another_widget_or_not_human_is_refused(widget, other_widget):
    foreign = AgentFactory(widget=other_widget)
    ai = AgentFactory(widget=widget, type="ai")
    for agent in (foreign, ai):
        with pytest.raises(ConfigInvalid):
            configure_support(
                widget=widget, data=base_config(operator_agent_id=agent.pk, allowed_tokens=["cwt_AbCdEf12"])
            )


def test_token_limit_zero_means_unlimited_and_is_stored(widget):
    agent = AgentFactory(widget=widget)
    stored = configure_support(
        widget=widget,
        data=base_config(
            operator_agent_id=agent.pk,
            allowed_tokens=["cwt_AbCdEf12"],
            token_reply_limit={"per_10_min": 0, "per_day": 0},
        ),
    )
    assert stored.token_reply_limit == {"per_10_min": 0, "per_day": 0}


def test_enable_account_link_switches_and_keeps_the_rest(widget):
    code, out, _ = run("enable_account_link", "--widget", widget.button_guid)
    assert code == 0 and json.loads(out) == {"widget_id": widget.pk, "account_link": True}
    code, out, _ = run("enable_account_link", "--widget", str(widget.pk), "--off")
    assert json.loads(out) == {"widget_id": widget.pk, "account_link": False}


def test_unknown_widget_exits_2(db, capsys):
    with pytest.raises(SystemExit) as exc:
        call_command("configure_support", "--widget", "999999", "--config", "{}")
    assert exc.value.code == 2


def test_admin_form_refuses_enabling_without_an_allowlist(widget):
    from apps.support.admin import SupportConfigForm

    agent = AgentFactory(widget=widget)
    base = {
        "widget": widget.pk,
        "enabled": True,
        "operator": agent.pk,
        "allowed_tokens": '["cwt_AbCdEf12"]',
        "ip_allowlist": "[]",
        "link_hosts": "[]",
        "exact_links": "[]",
        "ipv4_literals": "[]",
        "messenger_handles": "[]",
        "emails": "[]",
        "channels": '["widget"]',
        "room_reply_limit": '{"count": 3, "window_sec": 1800}',
        "token_reply_limit": '{"per_10_min": 20, "per_day": 300}',
    }
    form = SupportConfigForm(data=base)
    assert not form.is_valid()
    assert "an IP allowlist" in str(form.errors)
    form = SupportConfigForm(data={**base, "ip_allowlist": '["127.0.0.1/32"]'})
    assert form.is_valid(), form.errors
    stored = form.save()
    assert stored.enabled and stored.operator_id == agent.pk and stored.ip_allowlist == ["127.0.0.1/32"]


def test_admin_pages_render(admin_client, widget):
    from apps.support.models import SupportConfig

    SupportConfig.objects.create(widget=widget)
    for url in ("/admin/support/supportconfig/", "/admin/support/supportconfig/add/", "/admin/support/supportaction/"):
        assert admin_client.get(url).status_code == 200, url
