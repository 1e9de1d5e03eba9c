"""A package's `__init__` is its public face: it re-exports public names only. A private step
(`_lease`, `_finish`) stays in the module that defines it, and a test that drives it imports it
from there (`delivery.lease._lease`), so the face a newcomer reads lists what other code may use.

Refused in every `apps/**/__init__.py`: a `from <module of this project> import _name` (a name
with one leading underscore, whatever it is bound as) and a private name in `__all__`.
"""

from __future__ import annotations

import ast
from pathlib import Path

APPS = Path(__file__).resolve().parents[1] / "apps"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_reexports(source: str) -> list[tuple[int, str]]:
    """(line, name) of each private name `source` (an `__init__`) imports from this project or lists in `__all__`."""
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] == "apps"):
            found += [(node.lineno, a.name) for a in node.names if _private(a.name) or _private(a.asname or "")]
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
                for item in getattr(node.value, "elts", []):
                    if isinstance(item, ast.Constant) and isinstance(item.value, str) and _private(item.value):
                        found.append((node.lineno, item.value))
    return found


def test_no_package_re_exports_a_private_name():
    offenders = [
        f"{path.relative_to(APPS.parent)}:{line}: {name}"
        for path in sorted(APPS.rglob("__init__.py"))
        for line, name in private_reexports(path.read_text())
    ]
    assert offenders == []


def test_every_spelling_of_a_private_re_export_is_found():
    source = """
from __future__ import annotations
from .lease import _lease as _lease
from .lease import _lease_rows
from apps.webhooks.delivery.record import _record, deliver
from .load import SEND as _SEND
from .public import lease as lease
from django.db import _private_of_django
__all__ = ["lease", "_hidden"]
"""
    assert private_reexports(source) == [(3, "_lease"), (4, "_lease_rows"), (5, "_record"), (6, "SEND"), (9, "_hidden")]
