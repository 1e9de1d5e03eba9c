"""No Django model signals in production code: the service that changes a row says what follows
from it (house style, `emit()` once per change). A receiver of `post_save` runs for every save
whoever makes it, so the effect of a write is no longer where the write is.

Refused in the modules under apps/ and config/ (tests, migrations and the test plugin aside): an
import of a model signal, `<signal>.connect(...)` and `@receiver(<signal>, ...)`. Signals of the
database backend (`connection_created`), of `migrate` (`post_migrate`) and of Celery are not model
signals and stay allowed.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODEL_SIGNALS = frozenset(
    {"pre_init", "post_init", "pre_save", "post_save", "pre_delete", "post_delete", "m2m_changed"}
)
SIGNAL_MODULES = ("django.db.models.signals", "django.db.models")


def production_modules(root: Path) -> list[Path]:
    found = []
    for top in ("apps", "config"):
        for path in sorted((root / top).rglob("*.py")):
            parts = path.relative_to(root).parts
            if "tests" in parts or "migrations" in parts or parts[:3] == ("apps", "core", "testing"):
                continue
            found.append(path)
    return found


def _names(node: ast.expr) -> list[str]:
    """The last names of `node` or of the items of a list or tuple of them."""
    if isinstance(node, ast.List | ast.Tuple):
        return [name for item in node.elts for name in _names(item)]
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    return []


def model_signal_uses(source: str) -> list[tuple[int, str]]:
    """(line, what) of every model signal import, connect and receiver in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module in SIGNAL_MODULES:
            for alias in node.names:
                if alias.name in MODEL_SIGNALS or (node.module == "django.db.models" and alias.name == "signals"):
                    found.append((node.lineno, f"import {alias.name}"))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "django.db.models.signals":
                    found.append((node.lineno, f"import {alias.name}"))
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "connect":
                signal = _names(func.value)
                if signal and signal[0] in MODEL_SIGNALS:
                    found.append((node.lineno, f"{signal[0]}.connect"))
            if _names(func) == ["receiver"] and node.args:
                for name in _names(node.args[0]):
                    if name in MODEL_SIGNALS:
                        found.append((node.lineno, f"@receiver({name})"))
    return sorted(found)


def test_production_code_connects_no_model_signal():
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in production_modules(ROOT)
        for line, what in model_signal_uses(path.read_text())
    ]
    assert offenders == []


def test_every_spelling_of_a_model_signal_is_found():
    source = """
from django.db.models.signals import post_delete, post_save
from django.db.models import signals
import django.db.models.signals
from django.dispatch import receiver

post_save.connect(handler, sender=Model)
signals.pre_delete.connect(handler)

@receiver(post_delete, sender=Model)
def one(sender, **kwargs): ...

@receiver([m2m_changed, pre_save])
def two(sender, **kwargs): ...
"""
    assert model_signal_uses(source) == [
        (2, "import post_delete"),
        (2, "import post_save"),
        (3, "import signals"),
        (4, "import django.db.models.signals"),
        (7, "post_save.connect"),
        (8, "pre_delete.connect"),
        (10, "@receiver(post_delete)"),
        (13, "@receiver(m2m_changed)"),
        (13, "@receiver(pre_save)"),
    ]


def test_other_signals_are_not_model_signals():
    source = """
from django.db.backends.signals import connection_created
from django.db.models.signals import post_migrate
from celery import signals

connection_created.connect(handler)
post_migrate.connect(handler, sender=app)
signals.worker_ready.connect(handler)
"""
    assert model_signal_uses(source) == []
