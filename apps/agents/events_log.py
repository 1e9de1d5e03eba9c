"""The agent event log vocabulary: raw internal code -> stable slug (the contract) and the Russian
console message (not a contract, never to be parsed).

Rows store only the code. A code without an entry here (recorded by a newer console, or retired)
reads back as slug `unknown`, so adding a slug later never rewrites stored rows.
"""

from __future__ import annotations

from dataclasses import dataclass

UNKNOWN = "unknown"


@dataclass(frozen=True)
class EventKind:
    code: int
    slug: str
    message: str


KINDS: tuple[EventKind, ...] = (
    EventKind(1, "console_login", "Вошёл в консоль оператора"),
    EventKind(2, "console_logout", "Вышел из консоли оператора"),
    EventKind(10, "status_active", "Статус изменён на «На линии»"),
    EventKind(11, "status_relaxation", "Статус изменён на «Перерыв»"),
    EventKind(12, "suspended", "Оператор приостановлен"),
    EventKind(13, "restored", "Оператор восстановлен"),
    EventKind(14, "deleted", "Оператор удалён"),
    EventKind(20, "show_in_header_on", "Показ в шапке виджета включён"),
    EventKind(21, "show_in_header_off", "Показ в шапке виджета выключен"),
    EventKind(30, "avatar_set", "Аватар загружен"),
    EventKind(31, "avatar_removed", "Аватар удалён"),
    EventKind(40, "chat_accepted", "Принял чат №{chat_id}"),
    EventKind(41, "chat_transferred_in", "Получил чат №{chat_id} от другого оператора"),
    EventKind(42, "chat_transferred_out", "Передал чат №{chat_id} другому оператору"),
    EventKind(50, "invitation_accepted", "Принял приглашение и стал оператором виджета"),
)

BY_CODE: dict[int, EventKind] = {kind.code: kind for kind in KINDS}
BY_SLUG: dict[str, EventKind] = {kind.slug: kind for kind in KINDS}
# Every value of the `type` member and filter, `unknown` included.
SLUGS: tuple[str, ...] = (*BY_SLUG, UNKNOWN)

assert len(BY_CODE) == len(KINDS) and len(BY_SLUG) == len(KINDS), "codes and slugs must be unique"


class _Blank(dict):
    def __missing__(self, key):
        return "—"


def slug_of(code: int) -> str:
    kind = BY_CODE.get(code)
    return kind.slug if kind else UNKNOWN


def message_of(code: int, extra: dict | None = None) -> str:
    kind = BY_CODE.get(code)
    if kind is None:
        return f"Действие в консоли (код {code})"
    return kind.message.format_map(_Blank({k: v for k, v in (extra or {}).items() if isinstance(k, str)}))


def code_of(slug: str) -> int:
    """The code of a known slug; KeyError for `unknown` or anything else."""
    return BY_SLUG[slug].code
