"""/media/: only the public prefixes (avatars, departments, icons) after normalisation, with the
headers of every user upload; private files never (they leave through GET /v1/files/{id})."""

import shutil
import uuid
from pathlib import Path

import pytest
from django.conf import settings

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
HTML = b"<script>alert(document.cookie)</script>"


@pytest.fixture
def stored():
    """Files in the media root the routes serve from: a public avatar, a private chat file and
    an HTML file that landed in a public folder. Removed afterwards."""
    root = Path(settings.MEDIA_ROOT)
    tag = uuid.uuid4().hex
    made = {
        "avatar": root / "avatars" / tag / "face.png",
        "private": root / "files" / tag / "secret.html",
        "html_in_public": root / "icons" / tag / "page.html",
    }
    made["avatar"].parent.mkdir(parents=True, exist_ok=True)
    made["avatar"].write_bytes(PNG)
    made["private"].parent.mkdir(parents=True, exist_ok=True)
    made["private"].write_bytes(HTML)
    made["html_in_public"].parent.mkdir(parents=True, exist_ok=True)
    made["html_in_public"].write_bytes(HTML)
    yield {"tag": tag, "root": root, **made}
    for path in made.values():
        shutil.rmtree(path.parent, ignore_errors=True)


def test_a_public_avatar_is_served_inline_with_the_upload_headers(client, stored):
    response = client.get(f"/media/avatars/{stored['tag']}/face.png")
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == PNG
    assert response["Content-Type"] == "image/png"
    assert response["Content-Disposition"].startswith("inline;")
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Security-Policy"] == "default-src 'none'; sandbox"


@pytest.mark.parametrize(
    "path",
    [
        "/media/avatars/../files/{tag}/secret.html",
        "/media/avatars/%2e%2e/files/{tag}/secret.html",
        "/media/avatars/%2E%2E/files/{tag}/secret.html",
        "/media/icons/{tag}/../../files/{tag}/secret.html",
        "/media/avatars/./../files/{tag}/secret.html",
        "/media/files/{tag}/secret.html",
        "/media/avatars/..%2ffiles/{tag}/secret.html",
        "/media/avatars/..\\files/{tag}/secret.html",
    ],
)
def test_a_private_file_is_never_served_from_media(client, stored, path):
    response = client.get(path.format(tag=stored["tag"]))
    assert response.status_code == 404
    assert HTML not in b"".join(getattr(response, "streaming_content", [response.content]))


def test_a_symlink_out_of_a_public_folder_is_not_followed(client, stored):
    link = stored["root"] / "departments" / stored["tag"]
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(stored["private"].parent, target_is_directory=True)
    try:
        assert client.get(f"/media/departments/{stored['tag']}/secret.html").status_code == 404
    finally:
        link.unlink()


def test_html_in_a_public_folder_is_an_attachment_never_a_page(client, stored):
    response = client.get(f"/media/icons/{stored['tag']}/page.html")
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("attachment;")
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Security-Policy"] == "default-src 'none'; sandbox"


def test_the_media_root_itself_and_a_public_folder_are_not_listed(client, stored):
    assert client.get("/media/").status_code == 404
    assert client.get("/media/avatars/").status_code == 404
    assert client.get(f"/media/avatars/{stored['tag']}/").status_code == 404
