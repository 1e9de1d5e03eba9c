"""Reply text rules 2 and 3 of the support surface: normalisation, plain-text checks and the
official-link guard.

`apps.core.links.find_links` is the ONE detection of "anything the widget or a chat messenger would
turn into a link"; `check_links` decides which of them are official. Both work on the normalised
text, which is what is checked, sent and stored.
"""

from __future__ import annotations

import ipaddress
import json
import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import urlsplit

from apps.core.links import Link, ascii_host, find_links

from .errors import ForbiddenWhitespace, GuardError, InvalidText, LinkNotAllowed

TEXT_MAX = 3500
MAX_LINKS = 200  # more candidates than this: guard_error (shorten the text)

# --- rule 2: normalisation and plain text ---------------------------------------------------------

FORBIDDEN_WHITESPACE = frozenset("\t\f\x85\u2028\u2029")
# Removed by normalisation, never refused.
ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u2060\ufeff\u180e")
_ZERO_WIDTH_TABLE = {ord(c): None for c in ZERO_WIDTH}
_HTML_RE = re.compile(
    r"</?[A-Za-z][A-Za-z0-9-]*(\s[^<>]*)?/?\s*>|<!--|&(#[0-9]{1,7}|#x[0-9A-Fa-f]{1,6}|[A-Za-z]{2,31});"
)
_MD_LINK_RE = re.compile(r"\[[^\]\n]*\]\s?\([^)\n]*\)|\[[^\]\n]*\]\s?\[[^\]\n]*\]|^\s{0,3}\[[^\]\n]+\]:\s*\S", re.M)
_MD_AUTOLINK_RE = re.compile(r"<[A-Za-z][A-Za-z0-9+.-]{1,31}:[^<>\s]*>|<[^<>\s@]+@[^<>\s]+>")
_MARKER_RE = re.compile(r"\[\s*KEY_", re.I)
# Category Zs without U+0020 (fixed by the Unicode standard since 6.0).
_UNICODE_SPACES_RE = re.compile("[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Zl", "Zp"})


_ZERO_WIDTH_RE = re.compile("[" + "".join(sorted(ZERO_WIDTH)) + "]")


def normalize_text(text: str) -> str:
    """CR LF -> LF, Unicode spaces (category Zs) -> U+0020, zero-width characters removed.

    Speed: each step runs only when its pre-check (one C-level scan) finds something to change;
    `str.translate` with a table costs a dictionary lookup per character."""
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    if _ZERO_WIDTH_RE.search(text):
        text = text.translate(_ZERO_WIDTH_TABLE)
    if _UNICODE_SPACES_RE.search(text):
        text = _UNICODE_SPACES_RE.sub(" ", text)
    return text


def check_plain_text(text: str) -> None:
    """Rule 2 on normalised text: 422 `forbidden_whitespace` for tab, form feed, U+0085, U+2028,
    U+2029; 422 `invalid_text` for other control or invisible characters, a JSON body, HTML,
    Markdown links, `[KEY_...]` markers, and a length outside 1..3500 or blank text."""
    if not text.replace("\n", "").isprintable():  # the common case skips the per-character scan
        for ch in text:
            if ch in FORBIDDEN_WHITESPACE:
                raise ForbiddenWhitespace(f"The text holds U+{ord(ch):04X}; use spaces and newlines only.")
        for ch in text:
            if ch != "\n" and unicodedata.category(ch) in _REFUSED_CATEGORIES:
                raise InvalidText(f"The text holds a control or invisible character (U+{ord(ch):04X}).")
    if not text.strip():
        raise InvalidText("The text is empty.")
    if len(text) > TEXT_MAX:
        raise InvalidText(f"The text is {len(text)} characters after normalisation; at most {TEXT_MAX}.")
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            json.loads(stripped)
        except ValueError:
            pass
        else:
            raise InvalidText("The text is a JSON document; send plain text.")
    # Each pattern needs a character most replies lack (`[`, `<`, `&`): test for it first.
    square, angle = "[" in text, "<" in text
    if square and _MARKER_RE.search(text):
        raise InvalidText("`[KEY_...]` markers are not allowed in support replies.")
    if (angle or "&" in text) and _HTML_RE.search(text):
        raise InvalidText("HTML is not allowed; send plain text.")
    if (square and _MD_LINK_RE.search(text)) or (angle and _MD_AUTOLINK_RE.search(text)):
        raise InvalidText("Markdown links are not allowed; write the official link as plain text.")


# --- rule 3: the official catalogue ------------------------------------------------------------------


@dataclass(frozen=True)
class Catalogue:
    """What a reply may link to: the widget's configuration plus the customer's own addresses."""

    hosts: frozenset[str]  # lower-case, punycode
    exact_links: frozenset[str]
    app_store_id: str | None
    play_package: str | None
    ipv4: frozenset[str]
    handles: frozenset[str]  # lower-case, without @
    emails: frozenset[str]  # lower-case
    customer_emails: frozenset[str] = frozenset()
    customer_phones: frozenset[str] = frozenset()

    @classmethod
    def from_config(cls, config, *, customer_emails=(), customer_phones=()) -> Catalogue:
        return cls(
            hosts=frozenset(ascii_host(h) for h in config.link_hosts),
            exact_links=frozenset(config.exact_links),
            app_store_id=(config.app_store_id or "").removeprefix("id") or None,
            play_package=config.play_package or None,
            ipv4=frozenset(config.ipv4_literals),
            handles=frozenset(h.lower().lstrip("@") for h in config.messenger_handles),
            emails=frozenset(e.lower() for e in config.emails),
            customer_emails=frozenset(e.lower() for e in customer_emails),
            customer_phones=frozenset(customer_phones),
        )

    def allowed(self) -> list[str]:
        out = [f"https://{h}/" for h in sorted(self.hosts)]
        out += sorted(self.exact_links)
        if self.app_store_id:
            out.append(f"https://apps.apple.com/app/id{self.app_store_id}")
        if self.play_package:
            out.append(f"https://play.google.com/store/apps/details?id={self.play_package}")
        out += sorted(self.ipv4)
        for handle in sorted(self.handles):
            out += [f"https://t.me/{handle}", f"@{handle}"]
        out += sorted(self.emails)
        if self.customer_emails or self.customer_phones:
            out.append("the customer's own address from this chat")
        return out


_TG_HOSTS = frozenset({"t.me"})
_APP_STORE_PATH = re.compile(r"/(?:[a-z]{2}/)?app/(?:[^/?#]+/)?id([0-9]+)/?")


def _split(token: str) -> tuple[str, str, str, str, str, str] | None:
    """(scheme, userinfo, host, port, path, rest) of a link with or without scheme; None when it
    cannot be read as scheme://host..."""
    if "://" in token:
        scheme, _, tail = token.partition("://")
        scheme = scheme.lower()
    elif token.startswith("//"):
        scheme, tail = "", token[2:]
    else:
        scheme, tail = "", token
    cut = len(tail)
    for sep in "/?#":
        i = tail.find(sep)
        if i != -1:
            cut = min(cut, i)
    authority, rest = tail[:cut], tail[cut:]
    userinfo, _, hostport = authority.rpartition("@")
    host, port = hostport, ""
    if ":" in hostport:
        host, _, port = hostport.partition(":")
    path = rest
    return scheme, userinfo, host, port, path, rest


def _is_official(link: Link, cat: Catalogue) -> bool:
    token = link.token
    if token in cat.exact_links:
        return True
    if link.kind == "handle":
        return token[1:].lower() in cat.handles
    if link.kind == "bot_command":
        return token.rsplit("@", 1)[1].lower() in cat.handles
    if link.kind == "email":
        address = token.lower().removeprefix("mailto:")
        if "?" in address or "/" in address:
            return False
        return address in cat.emails or address in cat.customer_emails
    lower = token.lower()
    if lower.startswith("tel:"):
        digits = "".join(ch for ch in token[4:] if ch.isdigit())
        return bool(digits) and digits in cat.customer_phones
    parts = _split(token)
    if parts is None:
        return False
    scheme, userinfo, host, port, path, rest = parts
    if scheme not in ("", "https") or (scheme == "" and token.startswith("//")):
        return False
    if userinfo or ":" in token.split("//", 1)[-1].split("/", 1)[0] or port:
        return False  # credentials or a port: never official
    # Query and fragment only after a `/`.
    if rest and rest[0] in "?#":
        return False
    host_ascii = ascii_host(host)
    if link.kind == "ipv4" or _is_ipv4(host):
        return host in cat.ipv4
    if host_ascii in cat.hosts:
        return True
    if host_ascii in _TG_HOSTS:
        m = re.fullmatch(r"/([A-Za-z0-9_]{3,64})/?", path)
        return bool(m) and m.group(1).lower() in cat.handles  # no start parameter, no other path
    if host_ascii == "apps.apple.com" and cat.app_store_id:
        m = _APP_STORE_PATH.fullmatch(path)
        return bool(m) and m.group(1) == cat.app_store_id
    if host_ascii == "play.google.com" and cat.play_package:
        return path in (
            f"/store/apps/details?id={cat.play_package}",
            f"/store/apps/details/?id={cat.play_package}",
        )
    return False


def _is_ipv4(host: str) -> bool:
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        return False
    return True


def _view(link: Link) -> str:
    """What a click opens, with an IDN host shown in punycode so a look-alike is visible."""
    try:
        parts = urlsplit(link.view)
        host = parts.hostname or ""
        if host and not host.isascii():
            return link.view.replace(host, ascii_host(host), 1)
    except ValueError:
        pass
    return link.view


def check_links(text: str, catalogue: Catalogue) -> list[Link]:
    """Rule 3: every link in `text` must be official, else 422 `link_not_allowed` with
    `offending` [{token, kind, view}] and `allowed`. Returns the links found."""
    try:
        links = find_links(text)
    except Exception as exc:  # a pathological text must be refused, never sent unchecked
        raise GuardError("The text could not be checked; shorten it.") from exc
    if len(links) > MAX_LINKS:
        raise GuardError("The text has too many link-like parts to check; shorten it.")
    offending = [
        {"token": link.token, "kind": link.kind, "view": _view(link)}
        for link in links
        if not _is_official(link, catalogue)
    ]
    if offending:
        raise LinkNotAllowed(
            "The text links outside the official catalogue.", offending=offending, allowed=catalogue.allowed()
        )
    return links
