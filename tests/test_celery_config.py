"""Celery's configuration source (config.celery.DjangoCelerySettings): Django's CELERY_* settings,
read as they are now, with no lookup on Django's settings for a name they do not define."""

from __future__ import annotations

import pytest
from django.conf import LazySettings

from config.celery import DjangoCelerySettings, app


def test_celery_reads_the_django_settings_it_is_given(settings):
    assert app.conf.task_serializer == settings.CELERY_TASK_SERIALIZER == "json"
    assert app.conf.task_acks_late is settings.CELERY_TASK_ACKS_LATE is True
    settings.CELERY_TIMEZONE = "Europe/Moscow"  # a value changed later is read as it is then
    assert app.conf.timezone == "Europe/Moscow"


def test_a_setting_django_lacks_is_celerys_default_without_a_lookup_on_django(monkeypatch):
    asked: list[str] = []
    original = LazySettings.__getattr__

    def recording(self, name):
        asked.append(name)
        return original(self, name)

    monkeypatch.setattr(LazySettings, "__getattr__", recording)
    assert "CELERY_TASK_DEFAULT_PRIORITY" not in DjangoCelerySettings()
    assert app.conf.task_default_priority is None  # Celery's own default
    assert app.conf.task_time_limit is None
    # each name Django lacks was a raised AttributeError on Django's settings for every task sent
    assert not [name for name in asked if name in ("CELERY_TASK_DEFAULT_PRIORITY", "CELERY_TASK_TIME_LIMIT")]


def test_the_source_is_a_mapping_of_the_defined_names_only():
    source = DjangoCelerySettings()
    assert "CELERY_TASK_SERIALIZER" in source
    assert all(name.startswith("CELERY_") for name in source)
    assert len(source) == len(list(source))
    with pytest.raises(KeyError):
        source["CELERY_NOT_A_SETTING"]
