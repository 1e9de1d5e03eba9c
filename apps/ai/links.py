"""The link guard of what the AI writes for people: the hand-over summary (a private note) and the
suggested reply (the console's "Suggest"). Both are written from the visitor's own words, so a
visitor can dictate a link ("verify at https://evil.example"). A link there may point only to the
widget's own sites (the hosts its knowledge-base crawl starts from) and the knowledge base's sources
the answer was built on; any other is replaced by REMOVED before people read the text.

What counts as a link is the project's one detection, `apps.core.links.find_links`: what the web
widget or a chat messenger would open (any `scheme://...`, the bare schemes such as `mailto:`,
`tel:`, `javascript:`, names and e-mail addresses with a top-level domain of the public suffix
list's ICANN section, IPv4 addresses, `@handle`, `/command@bot`), so `file.txt` stays text.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from apps.core.links import Link, ascii_host, find_links
from apps.core.models import Widget
from apps.kb import selectors as kb_selectors

REMOVED = "[…]"


def _allowed(link: Link, hosts: frozenset[str], exact: frozenset[str]) -> bool:
    """An http(s) link to one of `hosts` (no credentials, no port) or one of the `exact` URLs, or an
    e-mail address on one of `hosts`; never a handle, a bot command or another scheme."""
    token = link.token
    if link.kind == "email":
        address = token.lower().removeprefix("mailto:")
        if "?" in address or "/" in address:
            return False
        return ascii_host(address.rpartition("@")[2]).removeprefix("www.") in hosts
    if link.kind not in ("url", "host", "ipv4"):
        return False
    if token in exact:
        return True
    try:
        parts = urlsplit(token if "://" in token else f"https://{token}")
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return False
    if parts.scheme.lower() not in ("http", "https") or parts.username or parts.password or port:
        return False
    return ascii_host(host).removeprefix("www.") in hosts


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
            hosts.add(ascii_host(host).removeprefix("www."))
    allowed = frozenset(hosts)
    # From the end backwards, so each replacement leaves the offsets of the links before it valid.
    for link in reversed(find_links(text)):
        if not _allowed(link, allowed, exact):
            text = text[: link.start] + REMOVED + text[link.end :]
    return text
