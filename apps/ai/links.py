"""The link guard of what the AI writes for people: the hand-over summary (a private note) and the
suggested reply (the console's "Suggest"). Both are written from the visitor's own words, so a
visitor can dictate a link ("verify at https://evil.example"). A link there may point only to the
widget's own sites (the hosts its knowledge-base crawl starts from) and the knowledge base's sources
the answer was built on; any other is replaced by REMOVED before people read the text.

What counts as a link is what a reader's client would open: any `scheme://...`, the bare schemes
browsers and messengers act on (`mailto:`, `tel:`, `javascript:`, ...), `www.` names, e-mail
addresses, and bare host names whose last label is a top-level domain of the public suffix list's
ICANN section (`evil.example/x`, `пример.рф`), so `file.txt` stays text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from publicsuffixlist import PublicSuffixList

from apps.core.models import Widget
from apps.kb import selectors as kb_selectors

REMOVED = "[…]"

_TAIL = r"[^\s<>\"'`]*"
_BARE_SCHEMES = (
    "mailto|tel|sms|callto|javascript|vbscript|data|file|tg|whatsapp|viber|skype|intent|market|bitcoin|magnet"
)
_SCHEMED = re.compile(rf"(?i)(?<![\w+.-])[a-z][a-z0-9+.-]{{1,31}}://{_TAIL}|(?<![\w+.-])(?:{_BARE_SCHEMES}):{_TAIL}")
_LABEL = r"[^\W_](?:[\w-]{0,61}[^\W_])?"
_EMAIL = re.compile(rf"(?<![\w.+-])[\w.+-]+@((?:{_LABEL}\.)+{_LABEL})")
_HOST = re.compile(rf"(?<![\w@.+-])((?:{_LABEL}\.)+{_LABEL})(?::[0-9]{{1,5}})?(?:[/?#]{_TAIL})?")
_TRAILING = ".,;:!?)]}'\""


@functools.cache
def _suffixes() -> PublicSuffixList:
    return PublicSuffixList(only_icann=True, accept_unknown=False)


def _ascii(host: str) -> str:
    host = host.lower().rstrip(".")
    try:
        return host.encode("idna").decode("ascii") if not host.isascii() else host
    except UnicodeError:
        return "\x00invalid"


def _is_domain(host: str) -> bool:
    return host.startswith("www.") or _suffixes().publicsuffix(_ascii(host)) is not None


def _allowed(url: str, hosts: frozenset[str], exact: frozenset[str]) -> bool:
    if url in exact:
        return True
    try:
        parts = urlsplit(url if "://" in url else f"https://{url}")
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return False
    if parts.scheme.lower() not in ("http", "https") or parts.username or parts.password or port:
        return False
    return _ascii(host).removeprefix("www.") in hosts


def guard_links(text: str, *, widget: Widget, sources: Iterable[dict] = ()) -> str:
    """`text` with every link outside the widget's own sites and `sources` (the knowledge-base
    sources, `{url}`, the text was built on) replaced by REMOVED."""
    if not text:
        return text
    exact = frozenset(str(s["url"]) for s in sources if s.get("url"))
    hosts = set(kb_selectors.site_hosts(widget))
    for url in exact:
        try:
            host = urlsplit(url).hostname
        except ValueError:
            host = None
        if host:
            hosts.add(_ascii(host).removeprefix("www."))
    allowed = frozenset(hosts)

    def schemed(match: re.Match) -> str:
        link = match.group(0).rstrip(_TRAILING)
        kept = link if _allowed(link, allowed, exact) else REMOVED
        return kept + match.group(0)[len(link) :]

    def email(match: re.Match) -> str:
        return match.group(0) if _ascii(match.group(1)).removeprefix("www.") in allowed else REMOVED

    def bare(match: re.Match) -> str:
        if not _is_domain(match.group(1)):
            return match.group(0)
        link = match.group(0).rstrip(_TRAILING)
        kept = link if _allowed(link, allowed, exact) else REMOVED
        return kept + match.group(0)[len(link) :]

    # Each pass leaves REMOVED where it took a link out, which no later pass reads as one.
    text = _SCHEMED.sub(schemed, text)
    text = _EMAIL.sub(email, text)
    return _HOST.sub(bare, text)
