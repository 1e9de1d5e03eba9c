"""Reply rules 2 and 3 on the text alone: normalisation, plain-text refusals and the official-link
guard, with a table-driven corpus written from the spec's words:

  Anything the widget or chat messenger would turn into a link (URL with any scheme, `www.`, name
  with a real top-level domain, IPv4 address, e-mail address, @handle, /command@bot) must be an
  official link: `https://HOST/path` or `HOST/path` for a configured host (no port, no
  credentials; query and fragment only after a `/`), a configured exact link, the widget's own
  app-store page, a configured IPv4 address, `t.me/<handle>` or `@handle` for a configured handle
  (no start parameter), a configured e-mail, or the customer's own address from this chat.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from django.conf import settings

from apps.core import links as detection
from apps.support import linkguard
from apps.support.errors import ForbiddenWhitespace, InvalidText, LinkNotAllowed

CATALOGUE = linkguard.Catalogue(
    hosts=frozenset({"shop.ru", "магазин.рф".encode("idna").decode()}),
    exact_links=frozenset({"https://docs.partner.com/guide?id=7"}),
    app_store_id="123456789",
    play_package="ru.shop.app",
    ipv4=frozenset({"203.0.113.10"}),
    handles=frozenset({"shop_bot"}),
    emails=frozenset({"help@shop.ru"}),
    customer_emails=frozenset({"client@mail.ru"}),
    customer_phones=frozenset({"79001234567"}),
)

ALLOWED = [
    # configured host, with and without https, paths, query and fragment after a slash
    "https://shop.ru/",
    "https://shop.ru",
    "shop.ru",
    "shop.ru/",
    "shop.ru/help",
    "https://shop.ru/help/orders",
    "https://shop.ru/help?order=5",
    "https://shop.ru/#faq",
    "shop.ru/?q=1",
    "shop.ru/path#frag",
    "HTTPS://SHOP.RU/Help",
    "Shop.Ru/help",
    "see https://shop.ru/help.",
    "(https://shop.ru/help)",
    "visit shop.ru/help, thanks",
    "https://shop.ru/a/b/c?x=1&y=2#z",
    # Cyrillic configured host, in Unicode and punycode
    "магазин.рф",
    "https://магазин.рф/помощь",
    "магазин.рф/заказы",
    "МАГАЗИН.РФ/",
    "https://xn--80aairftm.xn--p1ai/",
    "xn--80aairftm.xn--p1ai/help",
    # the configured exact link
    "https://docs.partner.com/guide?id=7",
    "read https://docs.partner.com/guide?id=7 please",
    # the widget's own app-store and play pages
    "https://apps.apple.com/app/id123456789",
    "https://apps.apple.com/ru/app/shop/id123456789",
    "https://apps.apple.com/us/app/id123456789",
    "https://play.google.com/store/apps/details?id=ru.shop.app",
    "play.google.com/store/apps/details?id=ru.shop.app",
    # configured IPv4 literal
    "203.0.113.10",
    "https://203.0.113.10/status",
    "203.0.113.10/status",
    # configured handle
    "@shop_bot",
    "write to @shop_bot",
    "@SHOP_BOT",
    "t.me/shop_bot",
    "https://t.me/shop_bot",
    "https://t.me/shop_bot/",
    "/start@shop_bot",
    "/help@shop_bot now",
    # configured e-mail and the customer's own
    "help@shop.ru",
    "HELP@SHOP.RU",
    "mailto:help@shop.ru",
    "client@mail.ru",
    "we wrote to client@mail.ru.",
    "tel:+7 900 123-45-67".replace(" ", ""),
    # things that are not links at all
    "Hello, how can I help?",
    "Your order 12.5 is ready",
    "time 10:30, ratio 3:4",
    "version 1.2.3",
    "file name report.finalx",
    # not a real top-level domain (IANA test names), an internationalised local part: not linkified
    "пример.испытание",
    "почта@магазин.рф",
    "a.b",
    "email@",
    "@ab",
    "price is 10 000 ₽",
    "Привет! Чем помочь?",
    "1.2.3.4.5",
    "e.g. and i.e.",
    "C:\\Users",
    "list: a, b, c",
    "shop . ru",
]

REFUSED = [
    # other hosts, any scheme, www.
    ("https://evil.com/", "url"),
    ("http://shop.ru/", "url"),
    ("evil.com", "host"),
    ("www.evil.com", "host"),
    ("www.shop.ru", "host"),
    ("sub.shop.ru/help", "host"),
    ("https://sub.shop.ru/", "url"),
    ("ftp://shop.ru/file", "url"),
    ("//shop.ru/x", "url"),
    ("//evil.com", "url"),
    ("tg://resolve?domain=evil", "url"),
    ("javascript:alert(1)", "url"),
    ("data:text/html,hi", "url"),
    ("intent://scan#Intent;end", "url"),
    ("custom-app://open", "url"),
    ("file:///etc/passwd", "url"),
    ("skype:evil?call", "url"),
    ("tel:+10000000000", "url"),
    ("sms:+10000000000", "url"),
    ("viber://chat?number=1", "url"),
    ("whatsapp://send?phone=1", "url"),
    ("magnet:?xt=urn:btih:abc", "url"),
    ("HTTPS://EVIL.COM", "url"),
    ("example.org/x", "host"),
    ("evil.io", "host"),
    ("evil.app", "host"),
    ("evil.shop", "host"),
    ("evil.xyz/login", "host"),
    ("my.site.co.uk", "host"),
    ("readme.md", "host"),
    ("script.py", "host"),
    ("archive.zip", "host"),
    ("evil.com.", "host"),
    ("(evil.com)", "host"),
    ("evil.com, then", "host"),
    ("see: evil.com/shop.ru", "host"),
    # look-alike hosts
    ("shop.ru.evil.com", "host"),
    ("shop-ru.com", "host"),
    ("shopru.com", "host"),
    ("shop.ru-evil.com", "host"),
    ("shop.rus.com", "host"),
    ("sh0p.ru", "host"),
    ("shop.su", "host"),
    ("shop.ru.com", "host"),
    ("evilshop.ru", "host"),
    ("xn--shop-9na.ru", "host"),
    ("ѕһор.ru", "host"),  # Cyrillic look-alike letters
    ("shоp.ru", "host"),  # Cyrillic o
    ("https://shоp.ru/", "url"),
    ("магазин2.рф", "host"),
    ("магазин.рф.evil.com", "host"),
    ("другой.рф", "host"),
    ("сайт.рф/login", "host"),
    ("https://сайт.рф", "url"),
    ("xn--80aswg.xn--p1ai", "host"),
    ("report.final", "host"),
    ("evil.онлайн", "host"),
    ("evil.xn--80asehdb", "host"),
    # ports and credentials on the configured host
    ("https://shop.ru:443/", "url"),
    ("https://shop.ru:8080/help", "url"),
    ("shop.ru:80/help", "host"),
    ("https://user:pass@shop.ru/", "url"),
    ("https://user@shop.ru/", "url"),
    ("https://shop.ru@evil.com/", "url"),
    ("https://evil.com@shop.ru/", "url"),
    ("user:pass@shop.ru/help", "email"),
    ("https://shop.ru:@evil.com", "url"),
    # query and fragment without a slash
    ("shop.ru?x=1", "host"),
    ("https://shop.ru?redirect=evil.com", "url"),
    ("shop.ru#frag", "host"),
    ("https://shop.ru#x", "url"),
    # exact links are exact
    ("https://docs.partner.com/guide?id=8", "url"),
    ("https://docs.partner.com/guide", "url"),
    ("https://docs.partner.com/", "url"),
    ("docs.partner.com/guide?id=7", "host"),
    ("http://docs.partner.com/guide?id=7", "url"),
    # app stores: only the widget's own pages
    ("https://apps.apple.com/app/id999", "url"),
    ("https://apps.apple.com/ru/app/other/id1234567890", "url"),
    ("https://apps.apple.com/", "url"),
    ("https://play.google.com/store/apps/details?id=com.evil", "url"),
    ("https://play.google.com/store/apps/details?id=ru.shop.app.evil", "url"),
    ("https://play.google.com/", "url"),
    ("http://apps.apple.com/app/id123456789", "url"),
    # IPv4 addresses
    ("10.0.0.1", "ipv4"),
    ("192.168.1.1/admin", "ipv4"),
    ("http://127.0.0.1/", "url"),
    ("https://203.0.113.11/", "url"),
    ("203.0.113.10:8080", "ipv4"),
    ("https://203.0.113.10:443/", "url"),
    ("http://203.0.113.10/", "url"),
    ("8.8.8.8", "ipv4"),
    ("1.1.1.1/dns", "ipv4"),
    # handles and bot commands
    ("@evil_bot", "handle"),
    ("ask @someone", "handle"),
    ("@shop_bot_fake", "handle"),
    ("@shopbot", "handle"),
    ("/start@evil_bot", "bot_command"),
    ("/help@shop_bot2", "bot_command"),
    # t.me: other handles and start parameters
    ("t.me/evil_bot", "host"),
    ("https://t.me/evil", "url"),
    ("t.me/shop_bot?start=abc", "host"),
    ("https://t.me/shop_bot?start=promo", "url"),
    ("https://t.me/shop_bot?startgroup=1", "url"),
    ("t.me/shop_bot/123", "host"),
    ("https://t.me/+AbCdEf", "url"),
    ("https://t.me/joinchat/AAAA", "url"),
    ("t.me/s/shop_bot", "host"),
    ("http://t.me/shop_bot", "url"),
    ("telegram.me/shop_bot", "host"),
    ("https://t.me:443/shop_bot", "url"),
    # e-mails: only configured or the customer's own
    ("evil@evil.com", "email"),
    ("help@evil.ru", "email"),
    ("help@shop.ru.evil.com", "email"),
    ("support@shop.ru", "email"),
    ("mailto:evil@evil.com", "email"),
    ("mailto:help@shop.ru?subject=x", "email"),
    ("other@mail.ru", "email"),
    ("client@mail.ru.evil.com", "email"),
    ("user@пример.рф", "email"),
    # several links: each offending one is named
    ("shop.ru/help and evil.com", "host"),
    ("@shop_bot or @evil", "handle"),
    ("help@shop.ru, evil@evil.com", "email"),
    # links hidden with invisible characters become visible after normalisation
    ("evil\u200b.com", "host"),
    ("ev\u200cil.com/x", "host"),
    ("www\u200d.evil.com", "host"),
    ("https\u2060://evil.com", "url"),
    ("evil\ufeff.com", "host"),
    ("evil\u00a0.com".replace("\u00a0", ""), "host"),
    ("javascript\u200b:alert(1)", "url"),
    ("@\u200bevil_bot", "handle"),
    ("/start\u200b@evil_bot", "bot_command"),
    ("t\u200b.me/evil_bot", "host"),
]


def test_corpus_is_large():
    assert len(ALLOWED) + len(REFUSED) >= 150


@pytest.mark.parametrize("text", ALLOWED)
def test_allowed(text):
    normalised = linkguard.normalize_text(text)
    linkguard.check_links(normalised, CATALOGUE)


@pytest.mark.parametrize("text,kind", REFUSED)
def test_refused(text, kind):
    normalised = linkguard.normalize_text(text)
    with pytest.raises(LinkNotAllowed) as exc:
        linkguard.check_links(normalised, CATALOGUE)
    offending = exc.value.extra["offending"]
    assert offending, text
    assert offending[-1]["kind"] == kind, offending
    assert all(set(o) == {"token", "kind", "view"} for o in offending)
    assert "https://shop.ru/" in exc.value.extra["allowed"]


def test_every_offending_link_is_named_with_its_view():
    with pytest.raises(LinkNotAllowed) as exc:
        linkguard.check_links("go to evil.com or https://сайт.рф/x or @evil_bot, ok shop.ru", CATALOGUE)
    offending = exc.value.extra["offending"]
    assert [o["token"] for o in offending] == ["evil.com", "https://сайт.рф/x", "@evil_bot"]
    assert offending[0]["view"] == "http://evil.com"
    assert offending[1]["view"].startswith("https://xn--")  # a look-alike shows in punycode
    assert offending[2]["view"] == "https://t.me/evil_bot"


# --- rule 2 -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw,normalised",
    [
        ("a\r\nb", "a\nb"),
        ("a\u00a0b", "a b"),
        ("a\u2003b\u3000c", "a b c"),
        ("a\u202fb", "a b"),
        ("ze\u200bro\u200c wi\u200ddth\u2060\ufeff", "zero width"),
        ("line\nbreak", "line\nbreak"),
    ],
)
def test_normalisation(raw, normalised):
    assert linkguard.normalize_text(raw) == normalised


@pytest.mark.parametrize("char", ["\t", "\f", "\x85", "\u2028", "\u2029"])
def test_forbidden_whitespace(char):
    with pytest.raises(ForbiddenWhitespace):
        linkguard.check_plain_text(linkguard.normalize_text(f"a{char}b"))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "\n\n",
        "x" * 3501,
        "a\x00b",
        "a\x07b",
        "a\x1bb",
        "a\rb",
        "a\x0bb",
        "a\x7fb",
        "a\u202eb",
        "a\u200eb",
        "a\u2066b",
        "a\u00adb",
        "a\U000e0041b",
        "a\ue000b",
        '{"text": "hi"}',
        "[1, 2, 3]",
        "<b>bold</b>",
        "<a href='x'>x</a>",
        "hi <br/> there",
        "<script>alert(1)</script>",
        "&lt;tag&gt;",
        "&#60;",
        "<!-- comment -->",
        "[click](https://shop.ru/)",
        "[click] (https://shop.ru/)",
        "[click][1]",
        "[1]: https://shop.ru/",
        "<https://shop.ru/>",
        "<help@shop.ru>",
        "[KEY_TO_OPERATOR]",
        "please [KEY_ESCALATE] now",
        "[key_to_operator]",
    ],
)
def test_invalid_text(text):
    with pytest.raises(InvalidText):
        linkguard.check_plain_text(linkguard.normalize_text(text))


@pytest.mark.parametrize(
    "text",
    [
        "x" * 3500,
        "x" * 3500 + "\u200b" * 10,
        "a < b and c > d",
        "5 > 3",
        "[note] plain",
        "{curly} text",
        "Q&A",
        "a\r\nb",
    ],
)
def test_plain_text_accepted(text):
    linkguard.check_plain_text(linkguard.normalize_text(text))


# --- the fast path finds exactly what the detectors find on the whole text --------------------------------


def _whole_text_links(text: str) -> list[tuple[int, int, str]]:
    """The reference: every detector of find_links run over the whole text (no candidate words, no
    de-duplication), with linkify-it's overlap rule."""
    found = []
    for match in detection._linkify().match(text) or ():
        found.append((match.index, match.last_index, "linkify"))
    for m in detection._ANY_SCHEME_RE.finditer(text):
        if m.group(2) is None and m.group(1).lower() not in detection._BARE_SCHEMES:
            continue
        raw = m.group(0).rstrip(".,;:!?)]}'\"")
        found.append((m.start(), m.start() + len(raw), "scheme"))
    for m in detection._BOT_COMMAND_RE.finditer(text):
        found.append((m.start(), m.end(), "bot"))
    for m in detection._HANDLE_RE.finditer(text):
        found.append((m.start(), m.end(), "handle"))
    found.sort(key=lambda f: (f[0], -f[1]))
    out, last_end = [], -1
    for start, end, _ in found:
        if start >= last_end:
            out.append((start, end))
            last_end = end
    return out


_PROSE = [
    "Hello",
    "заказ:",
    "Details:",
    "ok.",
    "end...",
    "a:b",
    "note:\n",
    "(see",
    "it)",
    "—",
    "1.5",
    "v2.0.1",
    "x@y",
    "/start",
    "e.g.",
    "10:30",
]
_LINKS = [item if isinstance(item, str) else item[0] for item in ALLOWED + REFUSED]


def _texts():
    import random

    rng = random.Random(16)
    seps = [" ", "  ", "\n", " \n ", "\u3000", ", "]
    for _ in range(300):
        words = rng.choices(_PROSE, k=rng.randint(1, 12)) + rng.choices(_LINKS, k=rng.randint(0, 4))
        words += rng.choices(_LINKS[:5], k=rng.randint(0, 3))  # the same link twice or more
        rng.shuffle(words)
        yield "".join(word + rng.choice(seps) for word in words)


@pytest.mark.parametrize("text", list(_texts()))
def test_candidate_words_find_what_the_whole_text_holds(text):
    text = linkguard.normalize_text(text)
    assert [(link.start, link.end) for link in detection.find_links(text)] == _whole_text_links(text)


def test_a_repeated_link_is_reported_at_each_place():
    text = "evil.com and again evil.com, then shop.ru and evil.com"
    links = detection.find_links(text)
    assert [(link.token, link.start) for link in links] == [
        ("evil.com", 0),
        ("evil.com", 19),
        ("shop.ru", 34),
        ("evil.com", 46),
    ]
    with pytest.raises(LinkNotAllowed) as exc:
        linkguard.check_links(text, CATALOGUE)
    assert [o["token"] for o in exc.value.extra["offending"]] == ["evil.com"] * 3


def test_normalisation_of_text_with_nothing_to_change_is_the_text_itself():
    text = "Plain reply, shop.ru/help: nothing to normalise."
    assert linkguard.normalize_text(text) is text


# --- one configuration for the guard and the widget ------------------------------------------------

_CORPUS = Path(__file__).with_name("link_corpus.json")


def test_the_widget_ships_the_guards_linkify_configuration():
    from apps.support.management.commands.export_linkguard import rendered

    shipped = (Path(settings.BASE_DIR) / detection.WIDGET_CONFIG_PATH).read_text(encoding="utf-8")
    assert shipped == rendered(), "run `python manage.py export_linkguard` and `make widget`"
    widget_source = (Path(settings.BASE_DIR) / "frontend/widget/src/links.js").read_text(encoding="utf-8")
    assert "new LinkifyIt({}, LINKGUARD.options).tlds([LINKGUARD.tldPattern], false)" in widget_source


@pytest.mark.parametrize("item", json.loads(_CORPUS.read_text(encoding="utf-8")), ids=lambda item: item["text"])
def test_the_guard_reads_the_shared_corpus(item):
    assert [m.text for m in detection._linkify().match(item["text"]) or []] == item["links"]


def test_the_widget_reads_the_shared_corpus_as_the_guard_does():
    widget_dir = Path(settings.BASE_DIR) / "frontend" / "widget"
    node = shutil.which("node")
    if node is None or not (widget_dir / "node_modules" / "linkify-it").is_dir():
        pytest.skip("node and frontend/widget/node_modules (make widget) are needed")
    config = Path(settings.BASE_DIR) / detection.WIDGET_CONFIG_PATH
    done = subprocess.run(
        [node, "test/links.mjs", str(config), str(_CORPUS)], cwd=widget_dir, capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr.decode()
    corpus = json.loads(_CORPUS.read_text(encoding="utf-8"))
    assert json.loads(done.stdout) == [item["links"] for item in corpus]
