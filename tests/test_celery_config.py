"""Celery's configuration is Django's CELERY_* settings (`config_from_object` with the CELERY
namespace), read as they are when Celery asks."""

from __future__ import annotations

from config.celery import app


def test_celery_reads_the_django_settings_it_is_given(settings):
    assert app.conf.task_serializer == settings.CELERY_TASK_SERIALIZER == "json"
    assert app.conf.task_acks_late is settings.CELERY_TASK_ACKS_LATE is True
    settings.CELERY_TIMEZONE = "Europe/Moscow"  # a value changed later is read as it is then
    assert app.conf.timezone == "Europe/Moscow"


def test_a_setting_django_lacks_is_celerys_default():
    assert app.conf.task_default_priority is None
    assert app.conf.task_time_limit is None
