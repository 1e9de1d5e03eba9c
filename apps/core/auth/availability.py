"""Which granted scopes a route accepts today. The catalogue (scopes.py) is the spec's whole list;
routes land app by app, so a scope no route names yet grants nothing: the admin's scope picker and
`issue_token` mark it "coming" rather than advertise it as working. Read from the URLconf, so a scope
stops being "coming" the moment its first route is mounted.
"""

from __future__ import annotations

from functools import lru_cache

from django.urls import URLPattern, URLResolver, get_resolver

from .scopes import CATALOGUE, CONDITIONAL_SCOPES, PRESETS, RESERVED_SCOPES, SENSITIVE_SCOPES

# A conditional scope works where the route it extends works (POST /v1/ai/replies).
_CONDITIONAL_BASE = {"responder:escalate": "responder:inject"}


def _callbacks(patterns):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _callbacks(pattern.url_patterns)
        elif isinstance(pattern, URLPattern):
            yield pattern.callback


@lru_cache(maxsize=4)
def _routed(urlconf: str | None) -> frozenset[str]:
    scopes: set[str] = set()
    for callback in _callbacks(get_resolver(urlconf).url_patterns):
        declared = getattr(getattr(callback, "cls", None), "route_scopes", None) or {}
        for names in declared.values():
            scopes.update(names)
    scopes.update(s for s in CONDITIONAL_SCOPES if _CONDITIONAL_BASE.get(s) in scopes)
    return frozenset(scopes)


def routed_scopes() -> frozenset[str]:
    """Scopes at least one mounted route accepts."""
    return _routed(None)


def coming_scopes() -> frozenset[str]:
    """Grantable, operational scopes that no mounted route accepts yet."""
    return frozenset(CATALOGUE) - RESERVED_SCOPES - routed_scopes()


def scope_label(scope: str) -> str:
    """`scope: what it grants`, with (S) for sensitive ones and the state when it grants nothing now."""
    text = f"{scope}{' (S)' if scope in SENSITIVE_SCOPES else ''}: {CATALOGUE[scope][0]}"
    if scope in RESERVED_SCOPES:
        return f"{text} [reserved: no route accepts it]"
    if scope in coming_scopes():
        return f"{text} [coming: its endpoints are not available yet]"
    return text


def preset_label(preset: str) -> str:
    coming = [s for s in PRESETS[preset] if s in coming_scopes()]
    return f"{preset} [coming: {', '.join(coming)} not available yet]" if coming else preset


def scopes_text() -> str:
    """The valid scopes on one line, those that grant nothing yet marked."""
    coming = coming_scopes()

    def name(scope: str) -> str:
        if scope in RESERVED_SCOPES:
            return f"{scope} (reserved)"
        return f"{scope} (coming)" if scope in coming else scope

    return "valid scopes: " + ", ".join(name(s) for s in sorted(CATALOGUE))


def presets_text() -> str:
    return "presets: " + "; ".join(f"{name} = {','.join(scopes)}" for name, scopes in sorted(PRESETS.items()))
