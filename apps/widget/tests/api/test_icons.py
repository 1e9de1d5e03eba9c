"""POST /v1/widget/icons: content-checked launcher icons answering `custom:{file_id}`."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.chats.models import File
from apps.widget import selectors
from apps.widget.icons import ICON_MAX_BYTES
from apps.widget.models import WidgetIcon
from apps.widget.tests import images
from apps.widget.tests.conftest import ICONS, SETTINGS, idem, patch
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db


def upload(client, name, content, **extra):
    return client.post(ICONS, {"file": SimpleUploadedFile(name, content)}, format="multipart", **{**idem(), **extra})


@pytest.mark.parametrize(
    "name, content, fmt, animated",
    [
        ("icon.png", images.png(), "png", False),
        ("icon.webp", images.webp(), "webp", True),
        ("icon.gif", images.gif(frames=1), "gif", False),
        ("icon.GIF", images.gif(frames=3), "gif", True),
    ],
)
def test_accepted_icons_answer_custom_file_id(api, widget, name, content, fmt, animated):
    response = upload(api(scopes=["widget:write"]), name, content)
    assert response.status_code == 201, response.content
    data = response.json()["data"]
    file = File.objects.get(pk=data["file_id"], widget=widget)
    assert data["icon_preset"] == f"custom:{file.pk}"
    assert (data["icon_format"], data["animated"], data["width"], data["height"]) == (fmt, animated, 32, 32)
    assert data["size"] == len(content) == file.size
    assert data["url"].startswith("http://testserver/media/icons/")
    icon = WidgetIcon.objects.get(file=file)
    assert icon.image.read() == content and file.stored.read() == content


def test_an_uploaded_icon_can_be_selected(api):
    client = api()
    preset = upload(client, "icon.png", images.png()).json()["data"]["icon_preset"]
    assert patch(client, {"icon_preset": preset}).json()["data"]["icon_preset"] == preset
    assert patch(client, {"device_profiles": {"mobile": {"icon_preset": preset}}}).status_code == 200


def test_the_public_config_carries_the_url_of_the_custom_icon(api, widget):
    client = api()
    data = upload(client, "icon.gif", images.gif(frames=2)).json()["data"]
    patch(client, {"icon_preset": data["icon_preset"]})
    config = selectors.public_config(widget=widget, absolute=lambda url: f"https://h.example{url}")
    assert config["settings"]["icon_preset"] == data["icon_preset"]
    assert config["icon_urls"][data["icon_preset"]].startswith("https://h.example/media/icons/")


def test_uploading_does_not_change_the_settings_but_purges(api, widget, purges):
    client = api()
    upload(client, "icon.png", images.png())
    assert client.get(SETTINGS).json()["data"]["icon_preset"] == "chat_bubble"
    assert widget.pk in purges


@pytest.mark.parametrize(
    "name, content, words",
    [
        ("icon.png", images.png(animated=True), "APNG"),
        ("icon.webp", images.webp(animated=False), "Static WebP"),
        ("icon.png", images.gif(), "name says"),
        ("icon.jpg", b"\xff\xd8\xff\xe0" + b"\x00" * 64, "must end in"),
        ("icon.svg", b"<svg xmlns='http://www.w3.org/2000/svg'/>", "must end in"),
        ("icon.png", b"<html><script>alert(1)</script></html>", "not a PNG"),
        ("icon.png", images.png()[:-5], "truncated"),
        ("icon.png", images.png()[:40] + b"\x00" + images.png()[41:], "corrupt"),
        ("icon.gif", images.gif()[:-1], "truncated"),
        ("icon.webp", images.webp()[:-2], "truncated"),
        ("icon.png", images.png(8, 8), "16 to 1024"),
        ("icon.png", images.png(2000, 16), "16 to 1024"),
        ("icon", images.png(), "must end in"),
    ],
)
def test_refused_icons_are_422_at_file(api, widget, name, content, words):
    body = assert_problem(upload(api(), name, content), 422, "validation_failed")
    assert list(body["errors"]) == ["file"]
    assert words in body["errors"]["file"][0]
    assert not File.objects.filter(widget=widget).exists()


def test_an_empty_file_is_refused(api):
    assert list(assert_problem(upload(api(), "icon.png", b""), 422)["errors"]) == ["file"]


def test_an_oversized_file_is_refused(api):
    content = images.png() + b"\x00" * (ICON_MAX_BYTES)
    body = assert_problem(upload(api(), "icon.png", content), 422)
    assert "exceeds" in body["errors"]["file"][0]


def test_a_body_far_over_the_limit_is_413(api):
    content = b"\x00" * (ICON_MAX_BYTES + 128 * 1024)
    assert_problem(upload(api(), "icon.png", content), 413)


def test_exactly_one_file_and_no_other_member(api):
    client = api()
    two = {"file": [SimpleUploadedFile("a.png", images.png()), SimpleUploadedFile("b.png", images.png())]}
    assert list(assert_problem(client.post(ICONS, two, format="multipart", **idem()), 422)["errors"]) == ["file"]
    assert list(assert_problem(client.post(ICONS, {}, format="multipart", **idem()), 422)["errors"]) == ["file"]
    extra = {"file": SimpleUploadedFile("a.png", images.png()), "name": "x"}
    assert list(assert_problem(client.post(ICONS, extra, format="multipart", **idem()), 422)["errors"]) == ["name"]


def test_json_is_415(api):
    assert_problem(api().post(ICONS, {"file": "x"}, format="json", **idem()), 415)


def test_upload_needs_an_idempotency_key_and_refuses_its_reuse(api):
    client = api()
    response = client.post(ICONS, {"file": SimpleUploadedFile("a.png", images.png())}, format="multipart")
    assert_problem(response, 400, "idempotency_key_missing")
    headers = idem()
    assert upload(client, "a.png", images.png(), **headers).status_code == 201
    assert_problem(upload(client, "a.png", images.png(), **headers), 409, "idempotency_key_reused")
    assert WidgetIcon.objects.count() == 1


def test_upload_needs_widget_write(api):
    assert_problem(upload(api(scopes=["widget:read"]), "a.png", images.png()), 403, "missing_scope")
