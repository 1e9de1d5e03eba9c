"""docs/integrating/mcp.md against the registry: its tables of tools and resources name exactly the
registered ones, with their REST twins, the scopes derived from those routes, and "nothing" changed
exactly for the tools that write nothing; its read-only token lists no write tool."""

from __future__ import annotations

import re
from pathlib import Path

from apps.mcp import registry

DOC = Path(__file__).resolve().parents[3] / "docs" / "integrating" / "mcp.md"


def _table(after: str) -> list[list[str]]:
    """The rows of the first table after the line starting with `after` (cells stripped)."""
    lines = DOC.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(after))
    rows = []
    for line in lines[start + 1 :]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows[2:]  # the header and the rule


def _codes(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _scopes_cell(calls) -> list[str]:
    return [" or ".join(sorted(call.scopes())) for call in calls]


def test_the_tools_table_is_the_registry():
    tools = registry.tools()
    rows = _table("<!-- tools-table")
    assert [_codes(row[0])[0] for row in rows] == list(tools)
    for name, twin, scopes, changes in rows:
        tool = tools[_codes(name)[0]]
        assert _codes(twin) == [f"{call.method} {call.path}" for call in tool.calls], name
        assert [s.replace("`", "") for s in scopes.split(", ")] == _scopes_cell(tool.calls), name
        assert (changes == "nothing" or changes.startswith("nothing (")) == (not tool.writes), name


def test_the_resources_table_is_the_registry():
    resources = registry.resources()
    rows = _table("### Resources")
    assert [_codes(row[0])[0] for row in rows] == list(resources)
    for uri, twin, scopes, content in rows:
        resource = resources[_codes(uri)[0]]
        assert _codes(twin) == [f"{call.method} {call.path}" for call in resource.calls]
        assert [s.replace("`", "") for s in scopes.split(", ")] == _scopes_cell(resource.calls)
        assert f"`{resource.mime_type}`" in content


def test_the_read_only_token_lists_every_tool_that_writes_nothing_but_suggest_reply():
    text = DOC.read_text()
    command = text[text.index("<!-- read-only-preset -->") :].split("```sh", 1)[1].split("```", 1)[0]
    scopes = frozenset(re.search(r"--scopes (\S+)", command).group(1).split(","))
    assert all(scope.endswith(":read") for scope in scopes)
    listed = {tool.name for tool in registry.tools().values() if tool.allowed(scopes)}
    readers = {tool.name for tool in registry.tools().values() if not tool.writes}
    assert listed == readers - {"suggest_reply"}
    assert all(resource.allowed(scopes) for resource in registry.resources().values())
