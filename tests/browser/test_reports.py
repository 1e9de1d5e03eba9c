"""The reports page in Chromium: the owner reads two weeks of the demo widget's figures in English,
Russian and Arabic (right to left), every chart drawn, a bar opening the chat list it counts, the
table view, a CSV download, clean under axe at desktop and phone widths; an operator sees only their
own figures and gets 403 for the owner's. Saves docs/img/owners/reports.png for the owners' guide."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.browser.console_pages import add_operator, sign_in
from tests.browser.owner_pages import WAIT, sign_in_owner, start_owner_server
from tests.live import manage

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "docs" / "img" / "owners" / "reports.png"
PHONE_SHOT = ROOT / "var" / "screenshots" / "reports-phone.png"
OPERATOR_EMAIL = "reports-operator@example.com"
OPERATOR_PASSWORD = "Reports-Browser-Test-80"
CHARTS = ("chats_by_channel", "first_response", "resolution", "rating", "handling", "sla")
LANGUAGE_NAMES = {"ru": "Русский", "ar": "العربية"}
HEADINGS = {"en": "Reports", "ru": "Отчёты", "ar": "التقارير"}

# How many colours a screenshot of the element holds (decoded by the browser itself): a blank
# canvas is one colour, a drawn chart many.
COLOURS = """async (dataUrl) => {
  const img = new Image();
  img.src = dataUrl;
  await img.decode();
  const c = document.createElement("canvas");
  c.width = img.naturalWidth; c.height = img.naturalHeight;
  const g = c.getContext("2d");
  g.drawImage(img, 0, 0);
  const px = g.getImageData(0, 0, c.width, c.height).data;
  const seen = new Set();
  for (let i = 0; i < px.length; i += 4) seen.add((px[i] << 16) | (px[i + 1] << 8) | px[i + 2]);
  return seen.size;
}"""


@pytest.fixture(scope="module")
def reports_server(live_template, tmp_path_factory):
    with start_owner_server(live_template, tmp_path_factory) as server:
        guid = live_template.seed["button_guid"]
        add_operator(server.var_dir, guid, email=OPERATOR_EMAIL, name="Olga", password=OPERATOR_PASSWORD)
        manage(
            server.var_dir,
            "shell",
            "-c",
            f"from tests.browser.report_seed import seed; seed({guid!r}, {OPERATOR_EMAIL!r})",
        )
        yield server


def colours_of(page, locator) -> int:
    import base64

    shot = base64.b64encode(locator.screenshot()).decode()
    return page.evaluate(COLOURS, f"data:image/png;base64,{shot}")


def open_reports(page, server, language: str) -> None:
    sign_in_owner(page, server)
    if language != "en":
        # The language switcher in the operator's menu (the name in the header)
        page.locator("details.account summary").click()
        page.locator("#language-switch").select_option(label=LANGUAGE_NAMES[language])
        page.locator("#language-form button[type=submit]").click()
        expect(page.locator("html")).to_have_attribute("lang", language, timeout=WAIT)
    page.get_by_role("link", name=HEADINGS[language], exact=True).click()
    expect(page.get_by_role("heading", level=1)).to_have_text(HEADINGS[language], timeout=WAIT)


@pytest.mark.parametrize("language", ["en", "ru", "ar"])
def test_the_owner_reads_every_chart_in_the_console_language(browser, reports_server, language):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    try:
        page = context.new_page()
        refused = []  # what the Content-Security-Policy blocked (an inline style or script)
        page.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
        open_reports(page, reports_server, language)
        html = page.locator("html")
        expect(html).to_have_attribute("lang", language)
        expect(html).to_have_attribute("dir", "rtl" if language == "ar" else "ltr")
        for name in CHARTS:
            section = page.locator(f"[data-chart={name}]")
            canvas = section.locator("canvas")
            expect(canvas).to_be_visible(timeout=WAIT)
            assert colours_of(page, canvas) > 8, f"{name}: the chart looks blank"
        if language == "ar":
            # Right to left: the range form starts at the right-hand side of the page.
            assert page.locator("#report-range").bounding_box()["x"] > 640
        assert refused == []
        results = Axe().run(page)
        assert results.violations_count == 0, results.generate_report()
        page.evaluate("window.scrollTo(0, 0)")
        if language == "en":
            SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOT), full_page=False)
        else:
            page.screenshot(path=str(PHONE_SHOT.with_name(f"reports-{language}.png")), full_page=True)
    finally:
        context.close()


def test_a_bar_opens_the_chat_list_it_counts(browser, reports_server):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    try:
        page = context.new_page()
        open_reports(page, reports_server, "en")
        canvas = page.locator("[data-chart=handling] canvas")
        expect(canvas).to_be_visible(timeout=WAIT)
        canvas.scroll_into_view_if_needed()
        # The horizontal bars run AI only, Operators only, ...: click along the second bar's row
        # (operators only, which the seed fills) until the pointer is over it.
        box = canvas.bounding_box()
        opened = False
        for step in range(5, 95, 5):
            page.mouse.move(box["x"] + box["width"] * step / 100, box["y"] + box["height"] * 0.3)
            if canvas.evaluate("c => c.style.cursor") == "pointer":
                page.mouse.click(box["x"] + box["width"] * step / 100, box["y"] + box["height"] * 0.3)
                opened = True
                break
        assert opened, "no bar under the pointer along the handling chart"
        expect(page).to_have_url(re.compile(r"/console/\?.*handling="), timeout=WAIT)
        query = parse_qs(urlsplit(page.url).query)
        assert query["handling"][0] in {"ai", "human", "ai_to_human", "human_to_ai", "missed"}
        assert query["from"] and query["to"]
        # The list shows the filter as a removable chip, and the chats it counts
        expect(page.locator(".filter-chips")).to_contain_text("Handling", timeout=WAIT)
        expect(page.locator(".chat-row").first).to_be_visible()
    finally:
        context.close()


def test_the_table_view_and_a_csv_download(browser, reports_server):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US", accept_downloads=True)
    try:
        page = context.new_page()
        open_reports(page, reports_server, "en")
        section = page.locator("[data-chart=chats_by_channel]")
        expect(section.locator("canvas")).to_be_visible(timeout=WAIT)
        expect(section.locator("table")).to_be_hidden()

        # The switch works from the keyboard alone
        table_button = section.get_by_role("button", name="Table")
        table_button.focus()
        page.keyboard.press("Enter")
        expect(table_button).to_have_attribute("aria-pressed", "true")
        expect(section.locator("table")).to_be_visible()
        expect(section.locator("canvas")).to_be_hidden()
        total = sum(int(text) for text in section.locator("tbody td:last-child").all_inner_texts())
        assert total > 0
        assert total == int(page.locator(".reports-totals .reports-figure").first.inner_text())

        # A count in the table is a link to the chats it counts
        first_link = section.locator("tbody td:last-child a").first
        assert "/console/?" in first_link.get_attribute("href")

        with page.expect_download() as download_info:
            section.get_by_role("link", name="Download CSV").click()
        download = download_info.value
        assert download.suggested_filename.startswith("report-chats_by_channel-")
        lines = Path(download.path()).read_text().splitlines()
        assert lines[0].startswith("day,") and lines[0].endswith(",total")
        assert sum(int(line.rsplit(",", 1)[1]) for line in lines[1:]) == total
    finally:
        context.close()


def test_the_page_is_clean_under_axe_on_a_phone(browser, reports_server):
    context = browser.new_context(viewport={"width": 390, "height": 844}, locale="en-US", is_mobile=True)
    try:
        page = context.new_page()
        open_reports(page, reports_server, "en")
        expect(page.locator("[data-chart=sla] canvas")).to_be_visible(timeout=WAIT)
        results = Axe().run(page)
        assert results.violations_count == 0, results.generate_report()
        PHONE_SHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(PHONE_SHOT), full_page=True)
    finally:
        context.close()


def test_an_operator_sees_only_their_own_figures_and_not_the_owners(browser, reports_server):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    try:
        page = context.new_page()
        sign_in(page, reports_server, email=OPERATOR_EMAIL, password=OPERATOR_PASSWORD)
        page.get_by_role("link", name="My statistics", exact=True).click()
        expect(page.get_by_role("heading", level=1)).to_have_text("My statistics", timeout=WAIT)
        operators = page.locator("[aria-labelledby=title-operators] tbody th")
        expect(operators).to_have_text(["Olga"])
        expect(page.locator("[aria-labelledby=title-departments]")).to_have_count(0)
        expect(page.locator("[data-chart=chats_by_channel] canvas")).to_be_visible(timeout=WAIT)

        response = page.goto(reports_server.url("/console/reports/?scope=widget"))
        assert response.status == 403
        expect(page.get_by_role("heading", level=1)).to_have_text("Only the widget's owner sees these figures")
    finally:
        context.close()
