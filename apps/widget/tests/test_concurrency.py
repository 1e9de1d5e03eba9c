"""Merge-safe PATCH with real threads on PostgreSQL: the settings row lock serialises writers, and
each writer merges only the keys it names, so concurrent writes of different fields all survive."""

import time

import pytest

from apps.widget import settings_schema
from apps.widget.models import WidgetSettings
from apps.widget.tests.conftest import SETTINGS, idem
from tests.support.concurrency import race

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def slow_merge(monkeypatch):
    """Widen the window between reading the stored keys and writing them back, so a writer that did
    not hold the row lock would overwrite the other's keys."""
    real = settings_schema.merge

    def slow(stored, delta):
        merged = real(stored, delta)
        time.sleep(0.3)
        return merged

    monkeypatch.setattr(settings_schema, "merge", slow)


def client_for(token):
    from rest_framework.test import APIClient

    client = APIClient()
    client.raise_request_exception = False
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def patcher(token, body):
    def work():
        response = client_for(token).patch(SETTINGS, body, format="json", **idem())
        return response.status_code

    return work


def test_two_concurrent_patches_of_different_fields_both_survive(widget, make_token, slow_merge):
    # given a widget whose settings row does not exist yet (both writers also race to create it)
    token = make_token(widget, ["widget:write"])
    # when
    results = race([patcher(token, {"widget_theme": "dark"}), patcher(token, {"widget_offset_x": 33})])
    # then
    assert results == [200, 200]
    assert WidgetSettings.objects.get(widget=widget).values == {"widget_theme": "dark", "widget_offset_x": 33}


def test_concurrent_device_profile_leaves_all_survive(widget, make_token, slow_merge):
    token = make_token(widget, ["widget:write"])
    bodies = [
        {"device_profiles": {"mobile": {"widget_button_size": 50}}},
        {"device_profiles": {"mobile": {"widget_offset_x": 4}}},
        {"device_profiles": {"desktop": {"widget_position": "top_left"}}},
        {"widget_color_primary": "#000000"},
    ]
    assert race([patcher(token, body) for body in bodies]) == [200] * 4
    assert WidgetSettings.objects.get(widget=widget).values == {
        "device_profiles": {
            "mobile": {"widget_button_size": 50, "widget_offset_x": 4},
            "desktop": {"widget_position": "top_left"},
        },
        "widget_color_primary": "#000000",
    }


def test_concurrent_policy_changes_each_move_the_revision_once(widget, make_token, slow_merge):
    token = make_token(widget, ["widget:write"])
    bodies = [
        {"widget_default_language": "de"},
        {"widget_fallback_language": "es"},
        {"widget_show_lang_switcher": False},
    ]
    assert race([patcher(token, body) for body in bodies]) == [200] * 3
    row = WidgetSettings.objects.get(widget=widget)
    assert row.language_policy_revision == 3
    assert row.values == {
        "widget_default_language": "de",
        "widget_fallback_language": "es",
        "widget_show_lang_switcher": False,
    }
