"""The console in the widget's seven languages: the language from the switcher's cookie, else the
browser's Accept-Language; right-to-left for Arabic; complete, compiled catalogues; the API untouched."""

import ast
import gettext
import json
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from django.utils.translation.template import templatize

from apps.widget.settings_schema import LANGUAGES as WIDGET_LANGUAGES

from .conftest import make_chat

LOCALE = Path(settings.BASE_DIR) / "locale"
CONSOLE = Path(settings.BASE_DIR) / "apps" / "console"
TRANSLATED = [code for code, _ in settings.LANGUAGES if code != "en"]


# --- the catalogues ------------------------------------------------------------------------------


def read_po(path: Path) -> list[dict]:
    """The entries of a .po file: msgctxt, msgid, msgid_plural, msgstr / msgstr[n], flags."""
    entries = []
    for block in path.read_text(encoding="utf-8").strip().split("\n\n"):
        entry, current = {"flags": ""}, None
        for line in block.splitlines():
            if line.startswith("#,"):
                entry["flags"] += line[2:]
                continue
            if line.startswith("#"):
                continue
            match = re.match(r"^(msgctxt|msgid_plural|msgid|msgstr(?:\[\d+\])?) (\".*\")$", line)
            if match:
                current = match.group(1)
                entry[current] = ast.literal_eval(match.group(2))
            elif line.startswith('"') and current:
                entry[current] += ast.literal_eval(line)
        entries.append(entry)
    return entries


def expected_catalogue(entries: list[dict]) -> dict:
    """What gettext's GNUTranslations reads from the .mo compiled from these entries."""
    catalogue = {}
    for entry in entries:
        if not entry.get("msgid"):
            continue
        key = entry["msgid"] if "msgctxt" not in entry else f"{entry['msgctxt']}\x04{entry['msgid']}"
        if "msgid_plural" in entry:
            for name, value in entry.items():
                if name.startswith("msgstr["):
                    catalogue[(key, int(name[7:-1]))] = value
        else:
            catalogue[key] = entry["msgstr"]
    return catalogue


def test_the_console_speaks_exactly_the_widgets_languages():
    assert [code for code, _ in settings.LANGUAGES] == list(WIDGET_LANGUAGES)
    assert settings.LOCALE_PATHS == [LOCALE]


# A string literal as templatize writes it: single-quoted, or double-quoted when it holds an apostrophe.
LITERAL = r"""(u?(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"))"""
GETTEXT_NAMES = {"_", "gettext", "gettext_lazy", "ngettext", "pgettext_lazy", "pgettext"}


def console_strings() -> set[tuple[str | None, str]]:
    """(context, msgid) of every string the console marks for translation, as makemessages finds
    them: Python calls of the gettext family, and the templates through Django's own templatize."""
    found = set()
    for path in CONSOLE.rglob("*.py"):
        if "tests" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in GETTEXT_NAMES:
                args = [a.value for a in node.args if isinstance(a, ast.Constant)]
                found.add((args[0], args[1]) if node.func.id.startswith("pgettext") else (None, args[0]))
    for path in (CONSOLE / "templates").rglob("*.html"):
        python = templatize(path.read_text(encoding="utf-8"))
        # The console's templates use {% translate %} and {% blocktranslate %} without context; a
        # plural (`count`) is one entry keyed by its singular.
        for literal in re.findall(rf"\bgettext\({LITERAL}\)", python):
            found.add((None, ast.literal_eval(literal)))
        for literal in re.findall(rf"\bngettext\({LITERAL},", python):
            found.add((None, ast.literal_eval(literal)))
    return found


def test_the_catalogues_hold_exactly_the_consoles_strings():
    source = console_strings()
    assert len(source) > 50
    for language in TRANSLATED:
        entries = read_po(LOCALE / language / "LC_MESSAGES" / "django.po")
        catalogue = {(e.get("msgctxt"), e["msgid"]) for e in entries if e.get("msgid")}
        assert source - catalogue == set(), f"{language}: not in the catalogue (run makemessages and translate)"
        assert catalogue - source == set(), f"{language}: no longer used (run makemessages --no-obsolete)"


@pytest.mark.parametrize("language", TRANSLATED)
def test_every_catalogue_is_fully_translated(language):
    entries = read_po(LOCALE / language / "LC_MESSAGES" / "django.po")
    messages = [e for e in entries if e.get("msgid")]
    assert len(messages) > 50
    for entry in entries:
        assert "fuzzy" not in entry["flags"], entry
        if not entry.get("msgid"):
            continue
        strings = [v for k, v in entry.items() if k.startswith("msgstr")]
        assert strings and all(s.strip() for s in strings), f"{language}: untranslated {entry['msgid']!r}"
        # The named placeholders survive translation (a plural form may spell out its number).
        if "msgid_plural" not in entry:
            assert set(re.findall(r"%\(\w+\)[sd]", entry["msgid"])) == set(
                re.findall(r"%\(\w+\)[sd]", entry["msgstr"])
            ), entry


@pytest.mark.parametrize("language", TRANSLATED)
def test_every_compiled_catalogue_is_up_to_date_with_its_po(language):
    folder = LOCALE / language / "LC_MESSAGES"
    entries = read_po(folder / "django.po")
    with (folder / "django.mo").open("rb") as compiled:
        catalogue = dict(gettext.GNUTranslations(compiled)._catalog)
    catalogue.pop("", None)  # the header
    assert catalogue == expected_catalogue(entries), "run msgfmt (or manage.py compilemessages) and commit the .mo"


# --- the pages ------------------------------------------------------------------------------------------


def page(client: Client, path: str = "/console/", *, accept: str | None = None) -> str:
    response = client.get(path, headers={"Accept-Language": accept} if accept else {})
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.django_db
def test_the_browsers_language_is_the_default(console, chat):
    html = page(console, accept="ru-RU,ru;q=0.9,en;q=0.5")
    assert '<html lang="ru" dir="ltr">' in html
    assert "Консоль оператора" in html and "Выйти" in html and "Поиск по сообщениям" in html
    assert "Operator console" not in html


@pytest.mark.django_db
def test_without_a_choice_or_a_known_browser_language_the_console_is_english(console, chat):
    html = page(console, accept="fi")
    assert '<html lang="en" dir="ltr">' in html and "Operator console" in html


@pytest.mark.django_db
def test_arabic_is_laid_out_right_to_left(console, chat):
    response = console.get("/console/", headers={"Accept-Language": "ar"})
    html = response.content.decode()
    assert '<html lang="ar" dir="rtl">' in html
    assert "لوحة الموظف" in html and "تسجيل الخروج" in html
    assert response["Content-Language"] == "ar" and "Accept-Language" in response["Vary"]


@pytest.mark.django_db
def test_a_chinese_browser_gets_the_chinese_console(console, chat):
    html = page(console, accept="zh-CN,zh;q=0.9")
    assert '<html lang="zh" dir="ltr">' in html and "客服控制台" in html


@pytest.mark.django_db
def test_a_chat_page_in_russian(console, widget, operator):
    chat = make_chat(widget, name="", body="Привет", agent=operator)
    type(chat.contact).objects.filter(pk=chat.contact_id).update(email="")
    html = page(console, f"/console/chats/{chat.pk}/", accept="ru")
    assert '<h1 id="chat-title"><bdi>Посетитель</bdi></h1>' in html  # the unnamed contact
    assert "Запросить оценку" in html and "Закрыть чат" in html and "Добавить заметку" in html
    assert '<span class="badge status-active" id="chat-status">открыт</span>' in html
    # The script's words come in the page's JSON block, translated.
    block = re.search(r'<script id="console-strings" type="application/json">(.*?)</script>', html).group(1)
    assert json.loads(block)["connected"] == "Подключено"


@pytest.mark.django_db
def test_form_errors_are_in_the_operators_language():
    response = Client(headers={"Accept-Language": "de"}).post("/console/login/", {"email": "", "password": ""})
    html = response.content.decode()
    assert response.status_code == 400
    assert "Geben Sie Ihre E-Mail-Adresse ein." in html and "Geben Sie Ihr Passwort ein." in html


@pytest.mark.django_db
def test_a_refusal_of_a_service_is_in_the_operators_language(htmx, widget):
    chat = make_chat(widget, status="spam")
    response = htmx.post(f"/console/chats/{chat.pk}/close/", headers={"Accept-Language": "es"})
    assert response.status_code == 409
    assert "Este chat está marcado como spam" in response.content.decode()


# --- the switcher -----------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_choice_is_remembered_across_requests_over_the_browsers_language(console, chat):
    response = console.post("/console/language/", {"language": "ar", "next": "/console/?status=active"})
    assert response.status_code == 303 and response["Location"] == "/console/?status=active"
    cookie = response.cookies[settings.LANGUAGE_COOKIE_NAME]
    assert cookie.value == "ar" and cookie["path"] == "/console/" and cookie["max-age"] == 365 * 24 * 3600

    for _ in range(2):
        html = page(console, accept="ru")
        assert '<html lang="ar" dir="rtl">' in html
        assert '<option value="ar" lang="ar" selected>' in html


@pytest.mark.django_db
def test_the_login_page_has_the_switcher_too():
    client = Client()
    html = page(client, "/console/login/")
    assert 'action="/console/language/"' in html
    response = client.post("/console/language/", {"language": "el", "next": "/console/login/"})
    assert response["Location"] == "/console/login/"
    assert "Κονσόλα χειριστή" in page(client, "/console/login/")


@pytest.mark.django_db
@pytest.mark.parametrize("bad", [{"language": "fr"}, {"language": ""}, {}, {"language": "en-gb-x-long"}])
def test_an_unknown_language_is_refused_and_sets_nothing(console, bad):
    response = console.post("/console/language/", bad)
    assert response.status_code == 400
    assert settings.LANGUAGE_COOKIE_NAME not in response.cookies


@pytest.mark.django_db
def test_a_foreign_next_is_not_followed(console):
    response = console.post("/console/language/", {"language": "de", "next": "https://evil.example/console/"})
    assert response.status_code == 303 and response["Location"] == "/console/"


@pytest.mark.django_db
def test_the_switcher_needs_the_csrf_token(operator):
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator.user)
    assert client.post("/console/language/", {"language": "de"}).status_code == 403


# --- the API stays English -----------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("language", ["ru", "ar", "de"])
def test_the_api_answers_in_english_whatever_the_language(widget, language):
    client = Client(headers={"Accept-Language": language})
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = language
    response = client.get("/api/v1/chats")
    assert response.status_code == 401
    assert response["Content-Type"].startswith("application/problem+json")
    assert response.json()["title"] == "Authentication required"
    assert "Content-Language" not in response
