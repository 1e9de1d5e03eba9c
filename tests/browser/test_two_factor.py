"""Two-factor sign-in in Chromium: a widget requires it, the owner signs in with the password and is
asked to enrol; the test reads the QR code from a screenshot (zxing-cpp), computes the code from the
secret it decoded, types it with the keyboard, keeps a recovery code from the page shown once, and
signs in again with it. Every page is clean under axe-core at 1280 and 390 pixels wide."""

from __future__ import annotations

import base64
import struct
import time
import zlib
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import numpy as np
import pytest
import zxingcpp
from axe_playwright_python.sync_playwright import Axe
from django_otp.oath import TOTP
from playwright.sync_api import expect

from tests.browser.console_pages import connected
from tests.browser.owner_pages import OWNER_EMAIL, OWNER_PASSWORD, WAIT, start_owner_server
from tests.live import manage

pytestmark = pytest.mark.browser

SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "img" / "operators" / "two-factor.png"
REQUIRE = (
    "from apps.core.models import Widget; from apps.widget import services; "
    "services.update_settings(widget=Widget.objects.get(button_guid={guid!r}), body={{'require_2fa': True}})"
)


@pytest.fixture(scope="module")
def server(live_template, tmp_path_factory):
    with start_owner_server(live_template, tmp_path_factory) as server:
        manage(server.var_dir, "shell", "-c", REQUIRE.format(guid=live_template.seed["button_guid"]))
        yield server


def clean_at_both_widths(page) -> None:
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 800})
        results = Axe().run(page)
        assert results.violations_count == 0, f"{page.url} at {width}px:\n{results.generate_report()}"
    page.set_viewport_size({"width": 1280, "height": 800})


def password_step(page, server) -> None:
    page.goto(server.url("/console/login/"))
    page.get_by_label("E-mail").fill(OWNER_EMAIL)
    page.get_by_label("Password").fill(OWNER_PASSWORD)
    page.get_by_label("Password").press("Enter")


def png_pixels(png: bytes) -> np.ndarray:
    """The pixels of a screenshot (8-bit RGB or RGBA, not interlaced: what Chromium writes) as a
    height x width x channels array, for zxing-cpp (Pillow is not a dependency of the suite)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, data, header = 8, b"", None
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos : pos + 8])
        body = png[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            data += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(data)
    stride = width * channels
    rows = np.zeros((height, stride), dtype=np.int32)
    previous = np.zeros(stride, dtype=np.int32)
    for y in range(height):
        start = y * (stride + 1)
        kind = raw[start]
        line = np.frombuffer(raw[start + 1 : start + 1 + stride], dtype=np.uint8).astype(np.int32)
        if kind == 0:
            out = line
        elif kind == 2:
            out = (line + previous) & 0xFF
        else:  # Sub, Average and Paeth depend on the pixel to the left: byte by byte
            out = np.zeros(stride, dtype=np.int32)
            for x in range(stride):
                left = out[x - channels] if x >= channels else 0
                up = previous[x]
                corner = previous[x - channels] if x >= channels else 0
                if kind == 1:
                    guess = left
                elif kind == 3:
                    guess = (left + up) // 2
                else:
                    p = left + up - corner
                    pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                    guess = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                out[x] = (line[x] + guess) & 0xFF
        rows[y] = out
        previous = out
    return np.ascontiguousarray(rows.astype(np.uint8).reshape(height, width, channels)[:, :, :3])


def code_from(uri: str) -> str:
    query = parse_qs(urlparse(uri).query)
    secret = query["secret"][0]
    key = base64.b32decode(secret + "=" * (-len(secret) % 8))
    totp = TOTP(key, step=int(query.get("period", ["30"])[0]), digits=int(query.get("digits", ["6"])[0]))
    totp.time = time.time()
    return f"{totp.token():06d}"


def test_enrolment_by_the_qr_code_then_a_recovery_code(browser, server):
    context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-US")
    try:
        page = context.new_page()
        password_step(page, server)
        expect(page).to_have_url(server.url("/console/login/enrol/"), timeout=WAIT)
        expect(page.get_by_role("heading", name="Set up two-factor sign-in", level=1)).to_be_visible()
        clean_at_both_widths(page)
        page.set_viewport_size({"width": 390, "height": 800})
        page.screenshot(path=str(SCREENSHOT.with_name("two-factor-phone.png")), full_page=True)
        page.set_viewport_size({"width": 1280, "height": 800})
        page.screenshot(path=str(SCREENSHOT), full_page=True)

        # the QR code, read from pixels as a phone's camera would
        shot = png_pixels(page.locator("svg.qr").screenshot())
        # one QR code, whatever number of times the reader reports it (it may find it once per
        # pass); only QR is asked for, since a random secret's modules can pass for a 1D barcode
        found = {code.text for code in zxingcpp.read_barcodes(shot, formats=zxingcpp.BarcodeFormat.QRCode)}
        assert len(found) == 1, found
        [uri] = found
        assert uri.startswith("otpauth://totp/") and "issuer=" in uri
        typed_key = page.locator("#twofa-secret").inner_text().replace(" ", "")
        assert parse_qs(urlparse(uri).query)["secret"][0] == typed_key  # the same secret in text

        # with the keyboard: focus the code box, type, Enter
        field = page.get_by_label("The six-digit code the app shows")
        field.focus()
        page.keyboard.type(code_from(uri))
        page.keyboard.press("Enter")
        expect(page.get_by_role("heading", name="Your recovery codes", level=1)).to_be_visible(timeout=WAIT)
        codes = page.locator("#recovery-codes code").all_inner_texts()
        assert len(codes) == 10
        clean_at_both_widths(page)
        page.get_by_role("link", name="I have kept them: continue").click()
        expect(page).to_have_url(server.url("/console/"), timeout=WAIT)
        connected(page)

        # the account page says it is on, and cannot be turned off while the widget requires it
        page.goto(server.url("/console/account/two-factor/"))
        expect(page.get_by_role("heading", name="Two-factor sign-in is on")).to_be_visible()
        expect(page.get_by_text("cannot be turned off")).to_be_visible()
        clean_at_both_widths(page)
    finally:
        context.close()

    again = browser.new_context(viewport={"width": 390, "height": 800}, locale="en-US")
    try:
        page = again.new_page()
        password_step(page, server)
        expect(page).to_have_url(server.url("/console/login/code/"), timeout=WAIT)
        clean_at_both_widths(page)
        page.get_by_label("Code", exact=True).fill(codes[0])
        page.get_by_role("button", name="Sign in").click()
        expect(page).to_have_url(server.url("/console/"), timeout=WAIT)
        connected(page)
    finally:
        again.close()
