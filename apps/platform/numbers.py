"""The one integer parser for text that comes from outside: query values, headers (ours and remote
servers'), websocket URL parameters and ids written as text.

`str.isdigit()` and `int()` accept far more than ASCII digits: `"²".isdigit()` is true but
`int("²")` raises, and `int("５")` (a fullwidth five) is 5, as is `int(" 5 ")` and `int("+5")`.
Nothing here accepts anything but the ten ASCII digits.
"""

from __future__ import annotations

import re

# The largest id any of our tables can hold (signed 64-bit, PostgreSQL bigint and SQLite INTEGER).
MAX_ID = 2**63 - 1
_MAX_ID_DIGITS = len(str(MAX_ID))

_DIGITS = re.compile(r"[0-9]+")


def parse_int(text: str | None, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """`text` as a non-negative integer of ASCII digits only (no sign, no spaces, no other script's
    digits), within [minimum, maximum] where given. ValueError otherwise."""
    if not isinstance(text, str) or not _DIGITS.fullmatch(text):
        raise ValueError("not a string of ASCII digits")
    significant = text.lstrip("0")
    if maximum is not None and len(significant) > len(str(maximum)):
        raise ValueError("above the maximum")  # decided without converting a huge digit string
    value = int(significant or "0")
    if minimum is not None and value < minimum:
        raise ValueError("below the minimum")
    if maximum is not None and value > maximum:
        raise ValueError("above the maximum")
    return value


def parse_id(text: str | None) -> int | None:
    """An id written as text (a query value, a URL parameter): ASCII digits, else ValueError.

    None when the number is past MAX_ID (however many digits): such an id names no row, and
    callers answer exactly as they do for a missing one (a database would refuse to bind it, which
    must never become a 500)."""
    if not isinstance(text, str) or not _DIGITS.fullmatch(text):
        raise ValueError("not a string of ASCII digits")
    significant = text.lstrip("0")
    if len(significant) > _MAX_ID_DIGITS:
        return None
    value = int(significant or "0")
    return value if value <= MAX_ID else None
