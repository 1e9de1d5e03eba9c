"""The guides stay true to the code: every environment variable config/settings.py reads is in the
configuration reference once, every management command is on the commands page, the performance
page is what scripts/bench_report.py makes of its log, and no development history (diary entries,
session numbers, run letters, commit hashes) is left where readers look: the README, docs/ and the
code's comments and docstrings. `mkdocs build --strict` (links, navigation, anchors) runs in CI
(`make docs-build`)."""

from __future__ import annotations

import ast
import io
import os
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
CONFIGURATION = DOCS / "operating" / "configuration.md"
COMMANDS = DOCS / "operating" / "commands.md"


def settings_variables() -> set[str]:
    """Names config/settings.py reads from the environment (django-environ's env.<type>("X") and
    os.environ.get("X"))."""
    source = (ROOT / "config" / "settings.py").read_text(encoding="utf-8")
    names = set(re.findall(r"""\benv(?:\.[a-z_]+)?\(\s*["']([A-Z][A-Z0-9_]*)["']""", source))
    names |= set(re.findall(r"""os\.environ\.get\(\s*["']([A-Z][A-Z0-9_]*)["']""", source))
    names |= set(re.findall(r"""os\.getenv\(\s*["']([A-Z][A-Z0-9_]*)["']""", source))
    return names


def test_every_setting_is_in_the_configuration_reference_once():
    names = settings_variables()
    assert {"DATABASE_URL", "CSRF_TRUSTED_ORIGINS", "SECURE_HSTS_SECONDS", "MEDIA_ROOT", "VAR_DIR"} <= names
    page = CONFIGURATION.read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", page, re.M)
    missing = sorted(names - set(rows))
    assert not missing, f"settings read by config/settings.py but not in {CONFIGURATION.name}: {missing}"
    twice = sorted({name for name in rows if rows.count(name) > 1})
    assert not twice, f"listed more than once in {CONFIGURATION.name}: {twice}"


def management_commands() -> set[str]:
    return {path.stem for path in (ROOT / "apps").glob("*/management/commands/*.py") if not path.stem.startswith("_")}


def test_every_management_command_is_on_the_commands_page():
    commands = management_commands()
    assert {"create_widget", "issue_token", "rotate_webhook_keys"} <= commands
    page = COMMANDS.read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `([a-z_]+)[ `]", page, re.M))
    missing = sorted(commands - listed)
    assert not missing, f"management commands missing from {COMMANDS.name}: {missing}"


def test_every_periodic_job_is_on_the_maintenance_page():
    source = (ROOT / "config" / "celery.py").read_text(encoding="utf-8")
    jobs = set(re.findall(r'^    "([a-z_]+\.[a-z_]+)": \(', source, re.M))
    jobs |= set(re.findall(r'BEAT_SCHEDULE\["([a-z_]+\.[a-z_]+)"\]', source))
    assert {"webhooks.sweep_deliveries", "webhooks.purge_delivery_log", "channels.poll_telegram"} <= jobs
    table = (DOCS / "operating" / "maintenance.md").read_text(encoding="utf-8")
    table = table[table.index("## Periodic jobs") :]
    listed = {name for row in re.findall(r"^\| (`.*?) \|", table, re.M) for name in re.findall(r"`([a-z_.]+)`", row)}
    missing = sorted(jobs - listed)
    assert not missing, f"periodic jobs missing from maintenance.md: {missing}"


# --- no history where readers look ---------------------------------------------------------------------

HISTORY = [
    (re.compile(r"\b[Ss]ession \d+\b"), "a session number"),
    (re.compile(r"\b[Rr]uns? [A-L]\b(?!['’-])"), "a run letter"),
    (re.compile(r"\((?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}[,;)]"), "a commit hash"),
    (re.compile(r"\bcommit [0-9a-f]{7,40}\b"), "a commit hash"),
    (re.compile(r"^#+ .*\b(?:[Dd]ay|[Ee]ntry) \d+\b", re.M), "a numbered diary entry"),
]


def history_in(text: str) -> list[str]:
    found = []
    for pattern, what in HISTORY:
        found += [f"{what}: {m.group(0)!r}" for m in pattern.finditer(text)]
    return found


def test_the_history_check_finds_what_it_looks_for():
    assert history_in("### Session 25: a socket's clean-up")
    assert history_in("Whole make bench, run L at the final code")
    assert history_in("the consumer now drops it (45316c5; three tests)")
    assert not history_in("a visitor session unused for 30 days; make run prints the token; run it again")


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


@pytest.mark.parametrize("path", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_documents_hold_no_development_history(path):
    found = history_in(path.read_text(encoding="utf-8"))
    assert not found, f"{path.relative_to(ROOT)}: {found}"


def python_comments_and_docstrings(path: Path) -> str:
    source = path.read_text(encoding="utf-8")
    parts = [
        tok.string for tok in tokenize.generate_tokens(io.StringIO(source).readline) if tok.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                parts.append(doc)
    return "\n".join(parts)


def line_comments(path: Path, marker: str) -> str:
    return "\n".join(
        line.split(marker, 1)[1] for line in path.read_text(encoding="utf-8").splitlines() if marker in line
    )


SKIPPED_FOLDERS = {"static", "migrations", "data", "__pycache__", "node_modules"}


def code_files() -> list[Path]:
    files = []
    for root in ("apps", "config", "scripts", "bench", "tests", ".ci", "frontend/widget/src"):
        for folder, subfolders, names in os.walk(ROOT / root):
            subfolders[:] = [name for name in subfolders if name not in SKIPPED_FOLDERS]
            files += [Path(folder) / name for name in names]
    files += [ROOT / "Makefile", ROOT / "Procfile", ROOT / "pyproject.toml", ROOT / "mkdocs.yml"]
    return [p for p in files if p != Path(__file__).resolve()]


def test_code_comments_hold_no_development_history():
    files = code_files()
    assert {ROOT / "config" / "settings.py", ROOT / "frontend" / "widget" / "src" / "loader.js"} <= set(files)
    found = []
    for path in files:
        if path.suffix == ".py":
            text = python_comments_and_docstrings(path)
        elif path.suffix in (".sh", ".toml", ".yml", ".yaml") or path.name in ("Makefile", "Procfile", "run"):
            text = line_comments(path, "#")
        elif path.suffix == ".js":
            text = line_comments(path, "//")
        else:
            continue
        found += [f"{path.relative_to(ROOT)}: {hit}" for hit in history_in(text)]
    assert not found, "development history in code comments:\n" + "\n".join(found)


def test_the_performance_page_is_generated_from_its_log():
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench_report.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


# --- the event bus's handlers ------------------------------------------------------------------------

HANDLERS_START, HANDLERS_END = "<!-- event handlers: start -->", "<!-- event handlers: end -->"


def handlers_table() -> str:
    """Every event type with a handler, and its handlers by phase, as the architecture page lists them."""
    from apps.core import events

    by_type: dict[str, dict[str, list[str]]] = {}
    for type_, phase, names in events.handler_names():
        by_type.setdefault(type_, {})[phase] = names
    lines = ["| event | in the transaction | after commit | outbox |", "|---|---|---|---|"]
    for type_, phases in by_type.items():
        cells = [
            ", ".join(f"`{name.removeprefix('apps.')}`" for name in phases.get(phase, []))
            for phase in (events.IN_TRANSACTION, events.ON_COMMIT, "outbox")
        ]
        lines.append(f"| `{type_}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def test_the_architecture_page_lists_every_event_handler():
    table = handlers_table()
    print(table)  # what the page's table must read
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    assert HANDLERS_START in text and HANDLERS_END in text
    listed = text.split(HANDLERS_START, 1)[1].split(HANDLERS_END, 1)[0].strip()
    assert listed == table, "docs/architecture.md's event handlers differ: paste the table this test printed"


# --- the ports ------------------------------------------------------------------------------------------

PORTS_START, PORTS_END = "<!-- ports: start -->", "<!-- ports: end -->"


def ports_table() -> str:
    """Every port declared in apps.core.ports, as the architecture page lists them."""
    from apps.core import ports

    lines = ["| port | meaning | provided by | used by |", "|---|---|---|---|"]
    for port in ports.declared():
        name = f"`{port.name}[{port.key}]`" if port.key else f"`{port.name}`"
        provided_by = ", ".join(f"`{app}`" for app in port.provided_by)
        lines.append(f"| {name} | {port.meaning} | {provided_by} | `{port.used_by}` |")
    return "\n".join(lines)


def test_the_architecture_page_lists_every_port():
    table = ports_table()
    print(table)  # what the page's table must read
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    assert PORTS_START in text and PORTS_END in text
    listed = text.split(PORTS_START, 1)[1].split(PORTS_END, 1)[0].strip()
    assert listed == table, (
        "docs/architecture.md's ports differ from apps.core.ports: paste the table this test printed"
    )


# Commands the examples may not assume: absent from a stock Debian or macOS install.
NOT_ON_EVERY_MACHINE = re.compile(r"\buuidgen\b")


def test_examples_use_only_commands_every_machine_has():
    pages = [ROOT / "README.md", *DOCS.rglob("*.md"), *(ROOT / ".ci").glob("*.sh")]
    found = [
        f"{page.relative_to(ROOT)}:{number}"
        for page in pages
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if NOT_ON_EVERY_MACHINE.search(line)
    ]
    assert not found, f"uuidgen is not on a stock Debian; use python3 -c 'import uuid; print(uuid.uuid4())': {found}"
