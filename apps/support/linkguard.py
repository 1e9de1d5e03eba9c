"""Reply text rules 2 and 3 of the support surface: normalisation, plain-text checks and the
official-link guard.

`find_links` is the ONE detection of "anything the widget or a chat messenger would turn into a
link"; `check_links` decides which of them are official. Both work on the normalised text, which is
what is checked, sent and stored.
"""

from __future__ import annotations

import bisect
import functools
import ipaddress
import json
import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import urlsplit

import publicsuffixlist
from linkify_it import LinkifyIt

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


# --- rule 3: link detection -------------------------------------------------------------------------


def _psl_tlds() -> list[str]:
    """Every top-level label of the ICANN section of the public suffix list shipped (pinned) with
    the `publicsuffixlist` package, in Unicode and in punycode. Nothing is downloaded."""
    labels: set[str] = set()
    icann = False
    with open(publicsuffixlist.PSLFILE, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if "===BEGIN ICANN DOMAINS===" in line:
                icann = True
            elif "===END ICANN DOMAINS===" in line:
                break
            elif icann and line and not line.startswith("//"):
                label = line.rsplit(".", 1)[-1].lstrip("!*").lower()
                if label:
                    labels.add(label)
                    try:
                        labels.add(label.encode("idna").decode("ascii"))
                    except UnicodeError:
                        pass
    return sorted(labels, key=lambda s: (-len(s), s))


TLDS = frozenset(_psl_tlds())
# `/command@bot` of a messenger, and any `scheme://` (linkify-it knows http, https, ftp, mailto
# and `//` by itself; messengers also turn other schemes into links).
_BOT_COMMAND_RE = re.compile(r"(?<![\w/])/[A-Za-z0-9_]{1,64}@([A-Za-z0-9_]{3,64})\b")
_ANY_SCHEME_RE = re.compile(r"(?<![A-Za-z0-9+.\-])([A-Za-z][A-Za-z0-9+.\-]{1,31}):(//)?[^\s<>\"'`]+", re.I)
# Schemes without `//` that clients open (a `word:word` in prose is not a link otherwise).
_BARE_SCHEMES = frozenset(
    {
        "mailto",
        "tel",
        "sms",
        "smsto",
        "javascript",
        "data",
        "vbscript",
        "file",
        "tg",
        "intent",
        "skype",
        "viber",
        "whatsapp",
        "xmpp",
        "magnet",
        "bitcoin",
        "callto",
        "facetime",
        "sip",
        "market",
        "itms-apps",
        "itms-services",
    }
)
_HANDLE_RE = re.compile(r"(?<![\w@./\-])@([A-Za-z0-9_]{3,64})\b(?![@.][A-Za-z0-9])")


def _trie_pattern(words: list[str]) -> str:
    """One regex matching exactly `words`, as a trie (`co(?:m|op|)`): Python's regex engine tries a
    flat alternation of 1,600 top-level domains one by one at every position, a trie in one step.
    Longer continuations come first, as linkify-it's longest-first order."""
    groups: dict[str, list[str]] = {}
    ends = False
    for word in words:
        if word:
            groups.setdefault(word[0], []).append(word[1:])
        else:
            ends = True
    branches = [re.escape(first) + _trie_pattern(rest) for first, rest in sorted(groups.items())]
    if not branches:
        return ""
    body = "|".join(branches)
    if len(branches) == 1 and not ends:
        return body if len(groups[next(iter(groups))]) == 1 and body.isalnum() else f"(?:{body})"
    return f"(?:{body}{'|' if ends else ''})"


# The widget's linkify-it reads the same configuration from frontend/widget/src/linkguard.json,
# which `manage.py export_linkguard` writes from here (a test fails when they differ).
WIDGET_CONFIG_PATH = "frontend/widget/src/linkguard.json"
_OPTIONS = {"fuzzyLink": True, "fuzzyEmail": True, "fuzzyIP": True}
_PY_OPTION = {"fuzzyLink": "fuzzy_link", "fuzzyEmail": "fuzzy_email", "fuzzyIP": "fuzzy_ip"}  # linkify-it-py's names


@functools.cache
def linkify_config() -> dict:
    """linkify-it's options (JavaScript names) and its one TLD pattern: what the server's detection
    and the widget's renderer both use."""
    return {"options": dict(_OPTIONS), "tldPattern": _trie_pattern(sorted(TLDS))}


@functools.cache
def _linkify() -> LinkifyIt:
    # `.tlds([pattern])`: linkify-it joins the list into a regex; one trie pattern of the same set
    # is the same regex language as the list itself, only faster.
    config = linkify_config()
    options = {_PY_OPTION[name]: value for name, value in config["options"].items()}
    return LinkifyIt(options=options).tlds([config["tldPattern"]], keep_old=False)


@dataclass(frozen=True)
class Link:
    token: str  # the characters of the text
    kind: str  # url, host, ipv4, email, handle, bot_command
    view: str  # what a click opens (the URL a client builds from it)
    start: int
    end: int


def _kind_of(schema: str, raw: str) -> str:
    if schema == "mailto:":
        return "email"
    if schema:
        return "url"
    host = raw.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0].rsplit("@", 1)[-1].split(":", 1)[0]
    try:
        ipaddress.IPv4Address(host)
        return "ipv4"
    except ValueError:
        return "host"


def find_links(text: str) -> list[Link]:
    """Everything in `text` the web widget or a chat messenger would turn into a link, in text order.

    The web widget's JavaScript renders links with the `linkify-it` npm package configured from the
    same `linkify_config()` (shipped as WIDGET_CONFIG_PATH; the widget links no more than this):

    - `new LinkifyIt({}, {fuzzyLink: true, fuzzyEmail: true, fuzzyIP: true})`
    - `.tlds([tldPattern], false)`: tldPattern matches every top-level label of the ICANN section of the public suffix
      list (Unicode and punycode forms, e.g. `рф` and `xn--p1ai`), from the pinned
      `publicsuffixlist` package; linkify-it also accepts any `xn--` top-level label;
    - schemes: linkify-it's defaults (`http:`, `https:`, `ftp:`, `mailto:`, `//`); any other
      `scheme://...`, and the schemes in `_BARE_SCHEMES` without `//` (`tel:`, `tg:`,
      `javascript:`, ...), are links too (`_ANY_SCHEME_RE`);
    - `@handle` (3 to 64 of `[A-Za-z0-9_]` after an `@` that does not follow a word character):
      `_HANDLE_RE`; `/command@bot`: `_BOT_COMMAND_RE`.

    A candidate overlapping an earlier one is dropped (linkify-it's own rule).

    Speed: a link never spans whitespace, and every detector treats a whitespace neighbour exactly
    like the start or end of the text, so they run over the words that could hold a link (those
    with `@` or `/`, a `:` followed by a character, or a `.` followed by a character other than a
    dot), each distinct word once, joined by newlines, not over the whole text: the same matches,
    placed at every occurrence of their word.
    """
    found: list[Link] = []
    joined, starts, occurrences = _candidate_words(text)
    if not joined:
        return found

    def place(index: int, length: int) -> list[tuple[int, int]]:
        at = bisect.bisect_right(starts, index) - 1
        offset = index - starts[at]
        return [(origin + offset, origin + offset + length) for origin in occurrences[at]]

    for match in _linkify().match(joined) or ():
        for start, end in place(match.index, match.last_index - match.index):
            raw = text[start:end]
            found.append(Link(raw, _kind_of(match.schema, raw), match.url, start, end))
    for m in _ANY_SCHEME_RE.finditer(joined):
        scheme = m.group(1).lower()
        if m.group(2) is None and scheme not in _BARE_SCHEMES:
            continue
        raw = m.group(0).rstrip(".,;:!?)]}'\"")
        for start, end in place(m.start(), len(raw)):
            found.append(Link(raw, "email" if scheme == "mailto" else "url", raw, start, end))
    for m in _BOT_COMMAND_RE.finditer(joined):
        for start, end in place(m.start(), len(m.group(0))):
            found.append(Link(m.group(0), "bot_command", m.group(0), start, end))
    for m in _HANDLE_RE.finditer(joined):
        for start, end in place(m.start(), len(m.group(0))):
            found.append(Link(m.group(0), "handle", f"https://t.me/{m.group(1)}", start, end))
    found.sort(key=lambda link: (link.start, -link.end))
    out: list[Link] = []
    last_end = -1
    for link in found:
        if link.start < last_end:
            continue
        out.append(link)
        last_end = link.end
    return out


# What makes a word a candidate: `@` or `/`; a `:` followed by a character (a `:` ending a word
# opens no scheme and starts no host); a `.` followed by a character other than a dot.
_TRIGGER_RE = re.compile(r"[@/]|:\S|\.[^\s.]")
_REST_OF_WORD_RE = re.compile(r"\S*")


def _candidate_words(text: str) -> tuple[str, list[int], list[list[int]]]:
    """The distinct words of `text` that may hold a link, joined by newlines; with each word's start
    in the joined string and the starts of its occurrences in `text`. Every detector of
    `find_links` runs on the joined string: each looks at most at a word's whitespace neighbours,
    and a newline stands for them. Words are found from their trigger character, so the scan of
    text without one is a single regex search."""
    parts: list[str] = []
    starts: list[int] = []
    occurrences: list[list[int]] = []
    index_of: dict[str, int] = {}
    position, scan = 0, 0
    search, rest = _TRIGGER_RE.search, _REST_OF_WORD_RE.match
    while (hit := search(text, scan)) is not None:
        begin = hit.start()
        while begin and not text[begin - 1].isspace():
            begin -= 1
        end = rest(text, hit.start()).end()
        word = text[begin:end]
        at = index_of.get(word)
        if at is None:
            index_of[word] = len(parts)
            parts.append(word)
            starts.append(position)
            occurrences.append([begin])
            position += len(word) + 1
        else:
            occurrences[at].append(begin)
        scan = end
    return "\n".join(parts), starts, occurrences


def emails_in(text: str) -> set[str]:
    """The e-mail addresses in `text` by the same detection (the customer's own addresses)."""
    out = set()
    for link in find_links(text):
        if link.kind == "email":
            out.add(link.token.lower().removeprefix("mailto:"))
    return out


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
            hosts=frozenset(_ascii_host(h) for h in config.link_hosts),
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


def _ascii_host(host: str) -> str:
    host = host.strip().lower().rstrip(".")
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return "\x00invalid"


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
    host_ascii = _ascii_host(host)
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
            return link.view.replace(host, _ascii_host(host), 1)
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
