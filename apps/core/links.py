"""Link detection: everything in a text the web widget or a chat messenger would turn into a link.

`find_links` is the ONE detection of links the project has. The support agents' reply guard
(`apps.support.linkguard`) decides which of them are official; the AI's notes and suggestions
(`apps.ai.links`) keep only those to the widget's own sites. The widget's JavaScript renders links
with linkify-it configured from `linkify_config()`, exported to WIDGET_CONFIG_PATH by
`manage.py export_linkguard`.
"""

from __future__ import annotations

import bisect
import functools
import ipaddress
import re
from dataclasses import dataclass

import publicsuffixlist
from linkify_it import LinkifyIt


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


def ascii_host(host: str) -> str:
    """`host` lower case, without a trailing dot, an IDN in punycode (an invalid one never matches a
    real host)."""
    host = host.strip().lower().rstrip(".")
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return "\x00invalid"
