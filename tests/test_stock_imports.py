"""Production code uses the public API of the frameworks it stands on: no `_`-prefixed name of django,
rest_framework, asgiref, kombu, channels_redis, psycopg or asyncio is imported (`from X import _name`,
`from X._module import ...`, `import X._module`) or read off an imported module or object of theirs
(`X._name`, `X.y._name`). A private name changes without notice between releases; what the project
needs of these packages goes through their documented seams.

Production code: apps/ and config/, without tests (`tests/` folders, `test_*.py`, conftest.py) and
without tests/support (the tests' own helpers).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"django", "rest_framework", "asgiref", "kombu", "channels_redis", "psycopg", "asyncio"}


def _private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _production_files() -> list[Path]:
    files = []
    for top in ("apps", "config"):
        for path in sorted((ROOT / top).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if "tests" in relative.parts or path.name.startswith("test_") or path.name == "conftest.py":
                continue
            if relative.parts[:3] == ("apps", "core", "testing"):
                continue
            files.append(path)
    return files


def _ours(module: str | None) -> bool:
    return bool(module) and module.split(".")[0] in PACKAGES


def private_uses(source: str) -> list[str]:
    """The private names of PACKAGES a module's source uses, dotted (`asyncio.events._get_running_loop`)."""
    tree = ast.parse(source)
    found: list[str] = []
    bound: dict[str, str] = {}  # a local name -> the dotted name it was imported as
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _ours(alias.name):
                    if any(_private(part) for part in alias.name.split(".")):
                        found.append(alias.name)
                    if alias.asname:
                        bound[alias.asname] = alias.name
                    else:
                        root = alias.name.split(".")[0]
                        bound[root] = root
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and _ours(node.module):
            module_private = any(_private(part) for part in node.module.split("."))
            for alias in node.names:
                dotted = f"{node.module}.{alias.name}"
                if module_private or _private(alias.name):
                    found.append(dotted)
                bound[alias.asname or alias.name] = dotted
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain = [node.attr]
            value = node.value
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in bound and any(_private(part) for part in chain):
                found.append(".".join([bound[value.id], *reversed(chain)]))
    return found


def test_the_checker_finds_every_form():
    source = (
        "import asyncio\n"
        "import kombu._private as k\n"
        "from django.db import _helper\n"
        "from psycopg._cmodule import thing\n"
        "from channels_redis import core\n"
        "from rest_framework.views import APIView\n"
        "asyncio._get_running_loop()\n"
        "core.RedisChannelLayer._group_key\n"
        "APIView.__init__\n"
        "self._fine\n"
    )
    assert sorted(private_uses(source)) == sorted(
        [
            "kombu._private",
            "django.db._helper",
            "psycopg._cmodule.thing",
            "asyncio._get_running_loop",
            "channels_redis.core.RedisChannelLayer._group_key",
        ]
    )


def test_production_code_uses_no_private_name_of_the_frameworks():
    offenders = set()
    for path in _production_files():
        relative = str(path.relative_to(ROOT))
        for name in private_uses(path.read_text()):
            offenders.add((relative, name))
    assert sorted(offenders) == [], "private names of the frameworks in production code:\n" + "\n".join(
        f"{path}: {name}" for path, name in sorted(offenders)
    )
