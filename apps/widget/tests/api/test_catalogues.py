"""GET /v1/widget/skins, /v1/widget/icons, /v1/widget/embed and the schema's catalogues."""

import pytest

from apps.widget.tests.conftest import EMBED, ICONS, SCHEMA, SKINS
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db


def test_skins_list_premium_and_availability_on_the_free_plan(api):
    data = api(scopes=["widget:read"]).get(SKINS).json()["data"]
    assert {"id": "classic", "name": "Classic", "premium": False, "available": True} in data
    assert all(row["available"] is (not row["premium"]) for row in data)
    assert any(row["premium"] for row in data)


def test_skins_follow_the_plan(api, monkeypatch):
    from apps.widget import services

    monkeypatch.setattr(services, "plan_features", lambda widget: {"plan": "pro", "premium_skins": True})
    assert all(row["available"] for row in api().get(SKINS).json()["data"])


def test_skin_catalogue_agrees_with_the_schema(api):
    client = api()
    skins = client.get(SKINS).json()["data"]
    member = client.get(SCHEMA).json()["data"]["fields"]["widget_skin"]
    assert member["enum"] == [row["id"] for row in skins]
    assert member["accepted_values"] == [row["id"] for row in skins if row["available"]]
    assert member["catalog_url"] == "/api/v1/widget/skins"


def test_icon_presets_agree_with_the_schema(api):
    client = api()
    presets = client.get(ICONS).json()["data"]
    member = client.get(SCHEMA).json()["data"]["fields"]["icon_preset"]
    assert [row["id"] for row in presets] == member["accepted_values"]
    assert member["catalog_url"] == "/api/v1/widget/icons"
    assert member["effective_default"] in member["accepted_values"]


def test_embed_gives_the_script_tag_for_this_widget(api, widget):
    data = api(scopes=["widget:read"]).get(EMBED).json()["data"]
    url = f"http://testserver/static/widget/loader.js?guid={widget.button_guid}"
    assert data == {
        "button_guid": widget.button_guid,
        "script_url": url,
        "snippet": f'<script src="{url}" async></script>',
    }


def test_embed_uses_the_configured_origin(api, widget, settings):
    settings.WIDGET_EMBED_ORIGIN = "https://cdn.example.com/"
    data = api().get(EMBED).json()["data"]
    assert data["script_url"] == f"https://cdn.example.com/static/widget/loader.js?guid={widget.button_guid}"


def test_embed_follows_the_host_called(api, widget, settings):
    settings.ALLOWED_HOSTS = ["api.example.org"]
    data = api().get(EMBED, HTTP_HOST="api.example.org", secure=True).json()["data"]
    assert data["script_url"].startswith("https://api.example.org/static/widget/loader.js?guid=")


@pytest.mark.parametrize("path", [SKINS, ICONS, EMBED, SCHEMA])
def test_catalogues_need_widget_read(api, path):
    assert_problem(api(scopes=["widget:write"]).get(path), 403, "missing_scope")
