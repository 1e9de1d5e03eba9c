"""The providers connected through the generic path (every messenger but `tg`, `vk` and `custom`)."""

from __future__ import annotations

from . import aliexpress, apple, cian, maxbot, meta, okru, viber
from .base import Provider

PROVIDERS: dict[str, Provider] = {
    p.code: p
    for p in (
        viber.PROVIDER,
        meta.WA,
        meta.FB,
        okru.PROVIDER,
        maxbot.PROVIDER,
        cian.PROVIDER,
        aliexpress.PROVIDER,
        apple.PROVIDER,
    )
}


def get(code: str) -> Provider | None:
    return PROVIDERS.get(code)
