"""POST /v1/widget/cache/purge and the served widget cache, observed through the public config."""

import inspect

import pytest

from apps.widget import selectors, services
from apps.widget.models import WidgetSettings
from apps.widget.tests.conftest import LANGUAGE, PURGE, idem, patch
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db


def purge(client, **headers):
    return client.post(PURGE, **{**idem(), **headers})


def config(widget) -> dict:
    return selectors.public_config(widget=widget)


def write_behind_the_services_back(widget, **values):
    """Change stored settings without a service (as a migration or the shell would): nothing purges."""
    row, _ = WidgetSettings.objects.get_or_create(widget=widget)
    row.values = {**row.values, **values}
    row.save()


# --- the endpoint -----------------------------------------------------------------------------------------


def test_purge_answers_200_and_purges(api, widget, purges):
    response = purge(api(scopes=["widget:write"]))
    assert response.status_code == 200
    assert response.json() == {"data": {"purged": True, "widget_id": widget.pk}}
    assert purges.count(widget.pk) >= 1


def test_purge_is_limited_to_6_per_minute_per_widget(api, widget, other_widget):
    client = api()
    for _ in range(6):
        assert purge(client).status_code == 200
    response = purge(client)
    assert_problem(response, 429, "rate_limited")
    assert 1 <= int(response["Retry-After"]) <= 60
    # per widget: another widget still has its six
    assert purge(api(w=other_widget)).status_code == 200


def test_a_refused_purge_releases_its_idempotency_key(api):
    client = api()
    for _ in range(6):
        purge(client)
    headers = idem()
    assert_problem(purge(client, **headers), 429)
    from apps.core.models import IdempotencyKey

    assert not IdempotencyKey.objects.filter(key=headers["HTTP_X_SERVICE_IDEMPOTENCY_KEY"]).exists()


def test_purge_needs_an_idempotency_key_and_refuses_its_reuse(api):
    client = api()
    assert_problem(client.post(PURGE), 400, "idempotency_key_missing")
    headers = idem()
    assert purge(client, **headers).status_code == 200
    assert_problem(purge(client, **headers), 409, "idempotency_key_reused")


def test_purge_needs_widget_write(api):
    assert_problem(purge(api(scopes=["widget:read"])), 403, "missing_scope")


# --- the served cache, observed through the public config ---------------------------------------------------


def test_the_public_config_is_cached_per_widget(widget, other_widget):
    first = config(widget)
    write_behind_the_services_back(widget, widget_theme="dark")
    assert config(widget) == first  # served from the cache
    assert config(widget)["settings"]["widget_theme"] == "light"
    assert config(other_widget)["button_guid"] == other_widget.button_guid


def test_the_purge_endpoint_makes_the_public_config_rebuild(api, widget):
    config(widget)
    write_behind_the_services_back(widget, widget_theme="dark")
    assert config(widget)["settings"]["widget_theme"] == "light"
    purge(api())
    assert config(widget)["settings"]["widget_theme"] == "dark"


def test_a_settings_patch_is_visible_in_the_public_config_at_once(api, widget):
    assert config(widget)["settings"]["widget_position"] == "bottom_right"
    patch(api(), {"widget_position": "top_left"})
    assert config(widget)["settings"]["widget_position"] == "top_left"


def test_a_language_put_is_visible_in_the_public_config_at_once(api, widget):
    assert config(widget)["language"] == "auto"
    api().put(LANGUAGE, {"widget_default_language": "es"}, format="json", **idem())
    assert config(widget)["language"] == "es"


def test_the_base_members_are_cached_with_the_settings(widget):
    calls = []

    def base():
        calls.append(1)
        return {
            "button_guid": widget.button_guid,
            "name": widget.name,
            "online": False,
            "features": {"rating": True, "offline_form": True},
        }

    selectors.public_config(widget=widget, base=base)
    selectors.public_config(widget=widget, base=base)
    assert calls == [1]
    services.purge_widget_cache(widget_id=widget.pk)
    selectors.public_config(widget=widget, base=base)
    assert calls == [1, 1]


def test_a_warm_read_is_one_round_trip_to_the_cache(widget, monkeypatch):
    from apps.widget import cache as widget_cache

    config(widget)
    calls, inside = [], []

    def spy(name, real):
        def call(*args, **kwargs):
            if not inside:  # a backend's get_many may be made of its own gets (Redis sends one MGET)
                calls.append(name)
            inside.append(name)
            try:
                return real(*args, **kwargs)
            finally:
                inside.pop()

        return call

    for name in ("get", "get_many", "set", "add"):
        monkeypatch.setattr(widget_cache.cache, name, spy(name, getattr(widget_cache.cache, name)))
    config(widget)
    assert calls == ["get_many"]


def test_an_entry_built_before_a_purge_is_never_served_after_it(widget):
    from apps.widget import cache as widget_cache

    builds = iter(range(1, 10))

    def read():
        return widget_cache.cached_per_generation(name="probe", widget_id=widget.pk, build=lambda: next(builds), ttl=60)

    assert (read(), read()) == (1, 1)
    services.purge_widget_cache(widget_id=widget.pk)
    assert (read(), read()) == (2, 2)
    # a reader that built under the older generation and stores last does not bring its value back
    widget_cache.cache.set(widget_cache.entry_key("probe", widget.pk), (1, "stale"), 60)
    assert read() == 3
    # nor does an entry of a later generation when the generation itself was evicted from the cache
    widget_cache.cache.delete(widget_cache.generation_key(widget.pk))
    assert read() == 4 and widget_cache.generation(widget.pk) == 1


def test_the_settings_drive_the_public_features_language_and_texts(api, widget):
    patch(
        api(),
        {
            "widget_show_rating": False,
            "widget_name": "Поддержка",
            "widget_text_translations": {"en": {"widget_name": "Support"}},
        },
    )
    payload = selectors.public_config(
        widget=widget, base=lambda: {"button_guid": widget.button_guid, "features": {"rating": True, "x": 1}}
    )
    assert payload["features"] == {"rating": False, "offline_form": True, "file_upload": True, "x": 1}
    assert payload["texts"]["en"]["widget_name"] == "Support"  # manual override
    assert payload["texts"]["ru"]["widget_name"] == "Поддержка"  # the tenant's source text
    assert payload["texts"]["ru"]["widget_greeting"] is None  # catalogue text
    assert "widget_auto_translate_custom_texts" not in payload["settings"]  # not public


def test_a_premium_skin_renders_as_the_default_after_a_downgrade(api, widget, monkeypatch):
    monkeypatch.setattr(services, "plan_features", lambda w: {"plan": "pro", "premium_skins": True})
    patch(api(), {"widget_skin": "neon"})
    monkeypatch.setattr(services, "plan_features", lambda w: {"plan": "free", "premium_skins": False})
    services.purge_widget_cache(widget_id=widget.pk)
    assert config(widget)["settings"]["widget_skin"] == "classic"


def test_a_plan_change_reaches_the_served_config_at_once(api, widget):
    # given a widget on a plan with premium skins, showing one, its config cached
    from apps.billing import services as billing
    from apps.billing.tests.factories import PlanFactory

    billing.assign_plan(account=widget.account, plan=PlanFactory(premium_skins=True))
    patch(api(), {"widget_skin": "neon"})
    assert config(widget)["settings"]["widget_skin"] == "neon"
    # when its account moves to a plan without them
    billing.assign_plan(account=widget.account, plan=PlanFactory(premium_skins=False, is_paid=False))
    # then the next visitor is served the default skin, not the cached premium one
    assert config(widget)["settings"]["widget_skin"] == "classic"


def _visitor_config_is_wired() -> bool:
    from apps.chats.visitor.views import ConfigView

    return "public_config" in inspect.getsource(ConfigView)


@pytest.mark.skipif(
    not _visitor_config_is_wired(), reason="ConfigView does not serve widget.services.public_config yet"
)
def test_purge_observed_through_the_visitor_config_route(api, client, widget):
    url = f"/api/visitor/v1/{widget.button_guid}/config"
    assert client.get(url).json()["settings"]["widget_theme"] == "light"
    write_behind_the_services_back(widget, widget_theme="dark")
    assert client.get(url).json()["settings"]["widget_theme"] == "light"
    assert purge(api()).status_code == 200
    assert client.get(url).json()["settings"]["widget_theme"] == "dark"
    patch(api(), {"widget_theme": "auto"})
    assert client.get(url).json()["settings"]["widget_theme"] == "auto"
