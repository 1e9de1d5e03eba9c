"""No state of ours on the framework's objects: production code keeps what it remembers in its own
objects (or a contextvar), never on a database connection, on the Django request behind DRF's, in a
model's `_state`, or in a `_`-attribute it sets on another object. Correctness must not depend on
state Django does not know about (a connection outlives requests and transactions; `_request` and
`_state` are Django's and DRF's internals).

Walks the AST of every production module under apps/ and config/ (tests and the test plugin aside)
and refuses each assignment (`x.a = ...`, `x.a += ...`, `setattr(x, "a", ...)` with a constant name)
whose target is:
- an attribute of a connection: `connection.*`, `connections[...].*`, `transaction.get_connection().*`
  or anything reached through one (`x.connection.*`);
- an attribute of the Django request behind a DRF request: `request._request.*`;
- a model instance's `_state` or anything in it: `*._state`, `*._state.*`;
- a `_`-prefixed attribute of any object other than the class's own (`self`, `cls`).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OWN = {"self", "cls", "mcs"}
# The exceptions, each with its reason (file, the assignment as the failure names it).
ALLOWED = {
    # SECURITY: our guarded outbound transport installed in a third-party SDK / httpcore pool that
    # offers no public seam; each install checks it took and fails closed if the internals move.
    ("apps/ai/providers/drivers/gigachat_token.py", "client._aclient_instance"),
    ("apps/ai/providers/drivers/gigachat_token.py", "client._auth_aclient_instance"),
    ("apps/ai/providers/drivers/gigachat_token.py", "client._client_instance"),
    ("apps/ai/providers/drivers/gigachat_token.py", "client._auth_client_instance"),
    ("apps/platform/outbound/httpx_transport.py", "pool._network_backend"),
    # A worker that keeps its connections across tasks asks Django's own health check for the next
    # query, as Django's request start does (the flag is how Django itself asks for it).
    ("config/celery.py", "connection.health_check_done"),
}


def production_modules() -> list[Path]:
    found = []
    for top in ("apps", "config"):
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = path.relative_to(ROOT).parts
            if "tests" in parts or parts[:3] == ("apps", "core", "testing"):
                continue
            found.append(path)
    return found


def _is_connection(node: ast.expr) -> bool:
    """`connection`, `connections[...]`, `transaction.get_connection()`, `x.connection` and what
    hangs below any of them."""
    while True:
        if isinstance(node, ast.Name):
            return node.id in {"connection", "connections"}
        if isinstance(node, ast.Attribute):
            if node.attr in {"connection", "connections"}:
                return True
            node = node.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            return name == "get_connection"
        else:
            return False


def _reaches(node: ast.expr, attr: str) -> bool:
    """`node` is `<something>.attr` or hangs below one."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        if isinstance(node, ast.Attribute) and node.attr == attr:
            return True
        node = node.value
    return False


def refused(owner: ast.expr, attr: str) -> str | None:
    """Why setting `owner.attr` is refused, or None."""
    if _is_connection(owner):
        return "state on a database connection"
    if _reaches(owner, "_request"):
        return "state on the Django request behind DRF's (`request._request`)"
    if attr == "_state" or _reaches(owner, "_state"):
        return "a model instance's `_state`"
    if attr.startswith("_") and not attr.startswith("__") and not (isinstance(owner, ast.Name) and owner.id in OWN):
        return f"a `_`-attribute (`{attr}`) set on another object"
    return None


def _targets(node: ast.AST):
    """(owner, attribute name) of every attribute this statement or call sets."""
    if isinstance(node, ast.Assign):
        pending = list(node.targets)
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        pending = [node.target]
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "setattr"
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        yield node.args[0], node.args[1].value
        return
    else:
        return
    while pending:
        target = pending.pop()
        if isinstance(target, ast.Tuple | ast.List):
            pending.extend(target.elts)
        elif isinstance(target, ast.Starred):
            pending.append(target.value)
        elif isinstance(target, ast.Attribute):
            yield target.value, target.attr


def violations(source: str, name: str = "<source>") -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source, name)):
        for owner, attr in _targets(node):
            why = refused(owner, attr)
            if why and (name.replace("\\", "/"), f"{ast.unparse(owner)}.{attr}") not in ALLOWED:
                found.append(f"{name}:{node.lineno}: {ast.unparse(owner)}.{attr} = ...: {why}")
    return found


def test_no_production_module_keeps_state_on_framework_objects():
    found = []
    for path in production_modules():
        found += violations(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert found == [], "\n".join(found)


@pytest.mark.parametrize(
    "source",
    [
        "connection._outbox_hand_off = (connection.run_on_commit, pending)",
        "transaction.get_connection().cached = 1",
        "connections['default'].x = 1",
        "self.connection.flag = True",
        "setattr(connection, 'x', 1)",
        "request._request.widget = token.widget",
        "request.widget = request._request.widget = self.widget",
        "django_request = request._request\nrequest._request.api_token += 1",
        "obj._state.adding = False",
        "obj._state = state",
        "locked._locked_in = transaction.get_connection().run_on_commit",
        "django_request._body = django_request.read(limit + 1)",
        "setattr(chat, '_cache', 1)",
        "a, chat._x = 1, 2",
    ],
)
def test_each_kind_of_framework_state_is_refused(source):
    assert violations(source)


@pytest.mark.parametrize(
    "source",
    [
        "self._compiled = {}",
        "cls._registry = {}",
        "request.widget = widget",
        "chat.status = 'active'",
        "value = connection.ops.quote_name('x')",
        "self.__dict__['x'] = 1",
        "setattr(obj, name, value)",
    ],
)
def test_our_own_state_is_allowed(source):
    assert violations(source) == []
