"""The shape of the code that `make lint` and its readers rely on.

- The import contracts (pyproject.toml `[tool.importlinter]`) see only regular packages: a module in a
  folder without `__init__.py` is absent from import-linter's graph, so its imports break no contract
  whatever they reach. Every folder of `apps/` that holds Python modules is a package.
- No production module is longer than MAX_MODULE_LINES.
"""

from __future__ import annotations

from pathlib import Path

APPS = Path(__file__).resolve().parents[1] / "apps"


def folders_without_init(root: Path) -> list[str]:
    missing = []
    for folder in sorted({path.parent for path in root.rglob("*.py")}):
        if "__pycache__" not in folder.parts and not (folder / "__init__.py").exists():
            missing.append(str(folder.relative_to(root.parent)))
    return missing


def test_every_folder_of_modules_is_a_package():
    assert folders_without_init(APPS) == []


def test_a_folder_without_init_is_reported(tmp_path):
    (tmp_path / "apps" / "x" / "api").mkdir(parents=True)
    (tmp_path / "apps" / "x" / "__init__.py").write_text("")
    (tmp_path / "apps" / "x" / "api" / "views.py").write_text("")
    assert folders_without_init(tmp_path / "apps") == ["apps/x/api"]


MAX_MODULE_LINES = 600


def long_modules(root: Path) -> list[str]:
    """Production modules (apps/ and config/, without tests and migrations) over MAX_MODULE_LINES."""
    found = []
    for top in ("apps", "config"):
        for path in sorted((root / top).rglob("*.py")):
            relative = path.relative_to(root)
            if "tests" in relative.parts or "migrations" in relative.parts or path.name.startswith("test_"):
                continue
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > MAX_MODULE_LINES:
                found.append(f"{relative}: {lines}")
    return found


def test_no_production_module_holds_more_than_600_lines():
    """A module that long mixes jobs: split it into a package along its sections, its `__init__`
    re-exporting the old names (apps/chats/services/ is the pattern)."""
    assert long_modules(APPS.parent) == []
