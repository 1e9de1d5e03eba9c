"""The variables of a canned response's text: `{{name}}` or `{{name|fallback}}`, `name` one of
`NAMES` (case-sensitive, surrounding spaces ignored). One parser serves the check on write and the
rendering for a chat, so what is accepted is exactly what renders."""

from __future__ import annotations

import re
from collections.abc import Mapping

NAMES = ("contact.name", "contact.email", "agent.name", "widget.name")
_VARIABLE = re.compile(r"\{\{(.*?)\}\}", re.S)


def _split(inner: str) -> tuple[str, str]:
    name, _, fallback = inner.partition("|")
    return name.strip(), fallback.strip()


def _known(inner: str) -> bool:
    name, fallback = _split(inner)
    return name in NAMES and "{{" not in fallback


def unknown_variables(text: str) -> list[str]:
    """Every `{{...}}` of `text` that is not one of `NAMES` (with an optional fallback that opens no
    `{{` of its own: that one would render as written), as written."""
    return [match.group(0) for match in _VARIABLE.finditer(text) if not _known(match.group(1))]


def render(text: str, values: Mapping[str, str | None]) -> str:
    """`text` with each variable replaced by its value; a missing or empty value takes the
    fallback, else an empty string. Text without variables is returned as it is."""

    def replace(match: re.Match) -> str:
        name, fallback = _split(match.group(1))
        return values.get(name) or fallback

    return _VARIABLE.sub(replace, text)
