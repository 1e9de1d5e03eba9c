"""The one rule that finds mentions in a note's text, whatever wrote the note (the console, the
REST API, a macro's or a rule's `add_note`).

A mention is `@` followed by a name of one of the widget's human operators: their display name
(`name surname`) or their first name alone, compared without regard to case (both in NFC). Where
several names fit after one `@`, the longest wins (`@Anna Petrova` is Anna Petrova, not Anna).
The `@` starts the text or follows a character that is not a letter, digit or `_` (an e-mail
address mentions nobody), and the name ends the text or is followed by such a character
(`@Annabel` does not mention Anna). A name that several operators share mentions each of them.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable


def _fold(text: str) -> str:
    # lower(), not casefold(): it keeps the length of (nearly) every name, so the text is cut at
    # the name's own length before comparing.
    return unicodedata.normalize("NFC", text).lower()


def _word(char: str) -> bool:
    return char.isalnum() or char == "_"


def names_of(name: str, surname: str) -> list[str]:
    """The names an operator answers to: the display name and, when it has a surname, the first
    name alone (blank ones left out)."""
    display = f"{name.strip()} {surname.strip()}".strip()
    return [n for n in dict.fromkeys([display, name.strip()]) if n]


def display_name(name: str, surname: str) -> str:
    """What the console's picker inserts after `@`."""
    return f"{name.strip()} {surname.strip()}".strip()


def find_mentions(text: str, operators: Iterable[tuple[int, list[str]]]) -> list[int]:
    """The ids of `operators` ((id, names)) that `text` mentions, in the order of their first
    mention, each once."""
    by_name: dict[str, list[int]] = {}
    for agent_id, names in operators:
        for name in names:
            by_name.setdefault(_fold(name), []).append(agent_id)
    if not by_name or "@" not in text:
        return []
    # Longest first: the first name that fits after an `@` is the longest one.
    candidates = sorted(by_name.items(), key=lambda item: len(item[0]), reverse=True)
    text = unicodedata.normalize("NFC", text)
    found: dict[int, None] = {}
    at = text.find("@")
    while at != -1:
        if at == 0 or not _word(text[at - 1]):
            rest = text[at + 1 :]
            for name, ids in candidates:
                head = rest[: len(name)]
                if len(head) < len(name) or head.lower() != name:
                    continue
                if len(rest) == len(name) or not _word(rest[len(name)]):
                    found.update(dict.fromkeys(ids))
                    break
        at = text.find("@", at + 1)
    return list(found)
