"""Every messenger provider by its code, in the order the messenger list shows them. The services
dispatch through it: connect, verify, disconnect, the hooks, long polling and replies."""

from __future__ import annotations

from . import aliexpress, apple, cian, maxbot, meta, okru, telegram, viber, vk
from .base import Provider

PROVIDERS: dict[str, Provider] = {
    p.code: p
    for p in (
        telegram.PROVIDER,
        vk.PROVIDER,
        meta.WA,
        viber.PROVIDER,
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
