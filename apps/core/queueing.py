"""The one way a service sends its app's Celery task: looked up by its registered name, so a
service module never imports the tasks module that imports it back.

Every task is registered under its dotted path (`apps.kb.tasks.ingest_document`: Celery's default
name, or the same string given as `name=`). A worker imports every app's `tasks` module when it
starts (config.celery's autodiscovery); another process registers a module's tasks on the first
look-up of one of them.
"""

from __future__ import annotations

from importlib import import_module

from celery import Task, current_app


def task(name: str) -> Task:
    """The task registered as `name`; KeyError (celery's NotRegistered) for a name its module does
    not register."""
    registry = current_app.tasks
    if name not in registry:
        import_module(name.rpartition(".")[0])  # its tasks register themselves on import
    return registry[name]
