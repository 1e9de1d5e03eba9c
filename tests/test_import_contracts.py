"""The import contracts of `make lint` (pyproject.toml `[tool.importlinter]`) see only regular
packages: a module in a folder without `__init__.py` is absent from import-linter's graph, so its
imports break no contract whatever they reach. Every folder of `apps/` that holds Python modules is a
package."""

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
