"""Ports (apps.core.ports): how a lower app asks a higher one, and what it gets when nothing answers."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from apps.agents import services as agent_services
from apps.ai import selectors as ai_selectors
from apps.ai.routing import dispatch_to_external
from apps.core import ports, signed
from apps.kb import hooks as kb_hooks
from apps.widget import selectors as widget_selectors
from tests.support.factories import AgentFactory, WidgetFactory

# --- declaring, providing, looking up -----------------------------------------------------------------


def test_every_port_is_provided_at_start_up_by_a_declared_app():
    for port in ports.declared():
        provided = ports.providers(port).values() if port.key else [ports.lookup(port)]
        assert provided, port.name
        for impl in provided:
            assert impl is not port.default, port.name
            module = getattr(impl, "__module__", None) or type(impl).__module__
            assert module.split(".")[1] in port.provided_by, (port.name, module)


def test_the_machine_answerers_are_the_ai_and_the_external_operators():
    assert list(ports.providers(ports.MACHINE_ANSWERER)) == ["ai", "external"]


def test_provide_replaces_the_provider_and_lookup_returns_it():
    with ports.override(ports.WIDGET_CREDENTIAL, None):
        ports.provide(ports.WIDGET_CREDENTIAL, ai_selectors.answers_visitors)
        ports.provide(ports.WIDGET_CREDENTIAL, ai_selectors.has_widget_wide_credential)
        assert ports.lookup(ports.WIDGET_CREDENTIAL) is ai_selectors.has_widget_wide_credential
    assert ports.lookup(ports.WIDGET_CREDENTIAL) is ai_selectors.has_widget_wide_credential


def test_only_a_declared_provider_app_may_provide():
    with pytest.raises(ImproperlyConfigured, match="widget_credential.*provided by ai"):
        ports.provide(ports.WIDGET_CREDENTIAL, lambda widget: True)
    assert ports.lookup(ports.WIDGET_CREDENTIAL) is ai_selectors.has_widget_wide_credential


def test_a_port_not_declared_in_the_module_is_refused():
    stray = ports.Port(name="stray", doc="Not declared.", provided_by=("ai",), used_by="core")
    with pytest.raises(ImproperlyConfigured, match="not declared"):
        ports.lookup(stray)
    with pytest.raises(ImproperlyConfigured, match="declared twice"):
        ports.declare("kb_ai", "Again.", provided_by=("ai",), used_by="kb")


def test_a_keyed_port_needs_its_key_and_a_plain_one_takes_none():
    with pytest.raises(TypeError, match="needs its kind"):
        ports.lookup(ports.MACHINE_ANSWERER)
    with pytest.raises(TypeError, match="takes no key"):
        ports.lookup(ports.KB_AI, key="ai")
    with pytest.raises(TypeError, match="not keyed"):
        ports.providers(ports.KB_AI)


def test_keyed_providers_come_by_key_in_order():
    def zulu(widget):
        return True

    def alpha(widget):
        return False

    with (
        ports.override(ports.MACHINE_ANSWERER, zulu, key="zulu"),
        ports.override(ports.MACHINE_ANSWERER, alpha, key="alpha"),
    ):
        found = ports.providers(ports.MACHINE_ANSWERER)
        assert list(found) == ["ai", "alpha", "external", "zulu"]
        assert found["zulu"] is zulu and found["alpha"] is alpha
        assert ports.lookup(ports.MACHINE_ANSWERER, key="alpha") is alpha
    assert list(ports.providers(ports.MACHINE_ANSWERER)) == ["ai", "external"]


def test_override_puts_the_provider_back_even_when_the_block_raises():
    before = ports.lookup(ports.KB_AI)
    with pytest.raises(RuntimeError), ports.override(ports.KB_AI, None):
        assert ports.lookup(ports.KB_AI) is ports.KB_AI.default
        raise RuntimeError
    assert ports.lookup(ports.KB_AI) is before


def test_the_fixture_puts_the_provider_back_after_the_test(provide_port):
    provide_port(ports.MACHINE_ANSWERER, None, key="ai")
    provide_port(ports.MACHINE_ANSWERER, lambda widget: True, key="test")
    assert list(ports.providers(ports.MACHINE_ANSWERER)) == ["external", "test"]


def test_after_the_fixture_the_apps_own_providers_answer_again():
    assert list(ports.providers(ports.MACHINE_ANSWERER)) == ["ai", "external"]


# --- what each lower app gets when nothing provides a port -------------------------------------------------


@pytest.fixture
def nothing_provided():
    with (
        ports.override(ports.EXTERNAL_ANSWERER, None),
        ports.override(ports.MACHINE_ANSWERER, None, key="ai"),
        ports.override(ports.MACHINE_ANSWERER, None, key="external"),
        ports.override(ports.ENDPOINT_SETTLED, None, key="external"),
        ports.override(ports.AGENT_RETURN, None, key="webhook"),
        ports.override(ports.WIDGET_CREDENTIAL, None),
        ports.override(ports.KB_AI, None),
        ports.override(ports.SIGNING_BINDING, None),
    ):
        yield


def test_without_providers_every_port_gives_its_default(nothing_provided):
    widget = object()
    assert ports.lookup(ports.EXTERNAL_ANSWERER)(object(), object()) is False
    assert ports.providers(ports.MACHINE_ANSWERER) == {}
    assert ports.lookup(ports.ENDPOINT_SETTLED, key="external")({1, 2}) is None
    assert ports.lookup(ports.AGENT_RETURN, key="webhook")(object()) == "active"
    assert ports.lookup(ports.WIDGET_CREDENTIAL)(widget) is False
    ai = ports.lookup(ports.KB_AI)
    assert (ai.embedder(widget), ai.assistants(widget), ai.ai_enabled(widget)) == (None, [], False)
    assert ports.lookup(ports.SIGNING_BINDING)(widget) is None


@pytest.mark.django_db
def test_without_providers_the_lower_apps_behave_as_without_the_higher_ones(nothing_provided):
    widget = WidgetFactory()
    assert dispatch_to_external(None, None) is False
    webhook_agent = AgentFactory(widget=widget, type="webhook", status="banned")
    assert agent_services.restore_agent(widget=widget, agent=webhook_agent).status == "active"
    assert signed.binding_for(widget) is None
    assert kb_hooks.current().embedder(widget) is None
    with pytest.raises(kb_hooks.EmbedError, match="no_credential"):
        kb_hooks.embed(widget, ["hello"])
    values = widget_selectors.effective_settings(widget) | {"widget_auto_translate_custom_texts": True}
    assert widget_selectors.translation_status(widget, values=values, revision=0)["reason"] == "credential_missing"
    with ports.override(ports.WIDGET_CREDENTIAL, lambda w: True):
        assert widget_selectors.translation_status(widget, values=values, revision=0)["reason"] is None
