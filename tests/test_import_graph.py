"""The import graph of the rooms: `config` on top imports the apps, no app imports `config`, and no
import cycle runs through two rooms (two apps, or an app and `config`). Imports inside functions
count: a late import is still an arrow. Test code (`apps.*.tests`) may reach anything and is left out.
"""

from __future__ import annotations

import grimp
import pytest


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("apps", "config")


def _is_test(module: str) -> bool:
    return module.startswith("apps.") and (".tests." in f"{module}." or module.endswith(".tests"))


def _room(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "apps" else parts[0]


def test_no_app_module_imports_config(graph):
    offending = sorted(
        f"{module} -> {imported}"
        for module in graph.modules
        if module.startswith("apps.") and not _is_test(module)
        for imported in graph.find_modules_directly_imported_by(module)
        if imported == "config" or imported.startswith("config.")
    )
    assert offending == []


def _cycles(graph) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    modules = sorted(m for m in graph.modules if not _is_test(m))
    inside = set(modules)
    edges = {m: sorted(i for i in graph.find_modules_directly_imported_by(m) if i in inside) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    counter = 0
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, position = work.pop()
            if position == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            children = edges[node]
            if position < len(children):
                work.append((node, position + 1))
                child = children[position]
                if child not in index:
                    work.append((child, 0))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return components


def test_no_import_cycle_crosses_a_room(graph):
    crossing = [sorted(c) for c in _cycles(graph) if len({_room(m) for m in c}) > 1]
    assert crossing == []


def test_events_send_their_task_by_name():
    # apps.core.tasks imports apps.core.events; the way back is a task name (apps.core.queueing)
    graph = grimp.build_graph("apps")
    assert "apps.core.tasks" not in graph.find_modules_directly_imported_by("apps.core.events")


def test_the_cycle_finder_finds_a_cycle_across_rooms():
    graph = grimp.ImportGraph()
    for module in ("apps.a.x", "apps.b.y", "config.z"):
        graph.add_module(module)
    graph.add_import(importer="apps.a.x", imported="apps.b.y")
    graph.add_import(importer="apps.b.y", imported="apps.a.x")
    assert [sorted(c) for c in _cycles(graph)] == [["apps.a.x", "apps.b.y"]]
