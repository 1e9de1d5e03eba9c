"""POST /v1/files (multipart `file` or JSON `{url}`), GET /v1/files/{id} (302 to a signed URL) and
the public download route behind it.

Fetch-by-url runs against a real TLS server on loopback with its own CA (REQUESTS_CA_BUNDLE and
OUTBOUND_ALLOW_LOOPBACK), never against the internet; private targets are refused before any socket.
"""

import ssl
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import trustme
from django.core import signing
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.chats.models import File
from apps.chats.payloads import signed_file_url
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

FILES = "/api/v1/files"
MAX = 10 * 1024 * 1024
PDF = b"%PDF-1.4 tiny test document\n"


def idem():
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"key-{uuid.uuid4().hex}"}


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path) -> Path:
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def upload(client, name="hello.txt", content=b"hello", content_type="text/plain", **headers):
    file = SimpleUploadedFile(name, content, content_type=content_type)
    return client.post(FILES, {"file": file}, format="multipart", **{**idem(), **headers})


def raw_multipart(client, parts: list[tuple[str, str | None, bytes, str | None]], **headers):
    """POST a hand-built multipart body: (field, filename or None, bytes, content type or None)."""
    boundary = "testboundary7d93"
    chunks = []
    for field, filename, data, content_type in parts:
        disposition = f'form-data; name="{field}"' + (f'; filename="{filename}"' if filename is not None else "")
        head = f"--{boundary}\r\nContent-Disposition: {disposition}\r\n"
        if content_type:
            head += f"Content-Type: {content_type}\r\n"
        chunks.append(head.encode() + b"\r\n" + data + b"\r\n")
    body = b"".join(chunks) + f"--{boundary}--\r\n".encode()
    return client.generic(
        "POST", FILES, body, content_type=f"multipart/form-data; boundary={boundary}", **{**idem(), **headers}
    )


def fetch(client, url, **headers):
    return client.post(FILES, {"url": url}, format="json", **{**idem(), **headers})


def download(client, response):
    """Follow a 302 of GET /v1/files/{id} with a plain client (no bearer token)."""
    assert response.status_code == 302, response.content
    location = urlsplit(response["Location"])
    assert location.netloc == "testserver"
    return client.get(location.path)


def body_of(response) -> bytes:
    try:
        return b"".join(response.streaming_content)
    finally:
        response.close()


def headers_of(response):
    """The headers of a download, closing its file without reading it."""
    response.close()
    return response


def stored_bytes(file_id) -> bytes:
    with File.objects.get(pk=file_id).stored.open("rb") as handle:
        return handle.read()


# --- a TLS server on loopback ------------------------------------------------------------------------


@dataclass
class Remote:
    port: int
    ca_path: Path

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 5

    def log_message(self, format, *args):
        pass

    def _reply(self, status, body=b"", headers=None):
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        parts = urlsplit(self.path)
        query = {key: values[0] for key, values in parse_qs(parts.query).items()}
        if parts.path == "/docs/report.pdf":
            self._reply(200, PDF, {"Content-Type": "application/pdf"})
        elif parts.path == "/docs/%D0%BE%D1%82%D1%87%D1%91%D1%82.txt":
            self._reply(200, "привет".encode(), {"Content-Type": "text/plain; charset=utf-8"})
        elif parts.path == "/untyped":
            self._reply(200, b"raw", {"Content-Type": "not a type"})
        elif parts.path == "/big":
            # Announces its size; the guarded client refuses it before reading the body.
            self._reply(200, b"x" * int(query["n"]), {"Content-Type": "application/octet-stream"})
        elif parts.path == "/empty":
            self._reply(200, b"", {"Content-Type": "text/plain"})
        elif parts.path == "/redirect":
            self._reply(302, b"", {"Location": query["to"]})
        elif parts.path == "/error":
            self._reply(500, b"boom")
        else:
            self._reply(404, b"no")


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request, client_address):
        pass


@pytest.fixture(scope="module")
def tls_remote(tmp_path_factory) -> Iterator[Remote]:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    ca_path = tmp_path_factory.mktemp("files-ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_path))
    httpd = _QuietServer(("127.0.0.1", 0), _Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    cert.configure_cert(context)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield Remote(port=httpd.server_address[1], ca_path=ca_path)
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def remote(tls_remote, settings, monkeypatch) -> Remote:
    """The loopback server, trusted through REQUESTS_CA_BUNDLE, with loopback allowed."""
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tls_remote.ca_path))
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    return tls_remote


# --- POST /v1/files: multipart -----------------------------------------------------------------------


def test_multipart_upload_is_stored_and_described(api, widget, media_root):
    # when
    response = upload(api(scopes=["files:write"]), "notes.txt", b"hello world", "text/plain")
    # then
    assert response.status_code == 201, response.content
    body = response.json()
    file = File.objects.get(pk=body["id"])
    assert body == {
        "id": file.pk,
        "name": "notes.txt",
        "content_type": "text/plain",
        "size": 11,
        "created_at": file.created_at.isoformat(),
    }
    assert file.widget_id == widget.pk
    assert stored_bytes(file.pk) == b"hello world"
    assert (media_root / file.stored.name).is_file()


def test_stored_name_is_random_and_never_the_clients(api, widget):
    body = upload(api(), "My Secret Report.TXT", b"x").json()
    stored = File.objects.get(pk=body["id"]).stored.name
    assert stored.startswith("files/")
    assert "Secret" not in stored and "Report" not in stored
    assert stored.endswith(".txt")


@pytest.mark.parametrize(
    ("client_name", "kept"),
    [
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\ann\\cv.pdf", "cv.pdf"),
        ("evil\u202etxt.exe", "eviltxt.exe"),
        ("tab\there.txt", "tabhere.txt"),
        ("...", "file"),
        ("отчёт 2024.pdf", "отчёт 2024.pdf"),
    ],
)
def test_client_file_name_is_cleaned_and_never_a_path(api, widget, media_root, client_name, kept):
    # when
    response = raw_multipart(api(), [("file", client_name, b"data", "application/pdf")])
    # then
    assert response.status_code == 201, response.content
    file = File.objects.get(pk=response.json()["id"])
    assert file.original_name == kept
    assert response.json()["name"] == kept
    assert Path(media_root / file.stored.name).resolve().is_relative_to(Path(media_root).resolve())


def test_long_name_is_cut_to_255_characters_keeping_the_extension(api, widget):
    body = upload(api(), "a" * 300 + ".pdf", b"x").json()
    assert len(body["name"]) == 255 and body["name"].endswith(".pdf")


def test_missing_or_bogus_content_type_falls_back_to_octet_stream(api, widget):
    response = raw_multipart(api(), [("file", "blob", b"x", "not/a type;")])
    assert response.json()["content_type"] == "application/octet-stream"


def test_a_file_of_exactly_10_mb_is_accepted(api, widget):
    response = upload(api(), "big.bin", b"\0" * MAX, "application/octet-stream")
    assert response.status_code == 201, response.content
    assert response.json()["size"] == MAX


def test_a_file_one_byte_over_10_mb_is_413_and_stores_nothing(api, widget, media_root):
    response = upload(api(), "big.bin", b"\0" * (MAX + 1), "application/octet-stream")
    assert_problem(response, 413, "body_too_large")
    assert not File.objects.exists()
    assert not any(p.is_file() for p in Path(media_root).rglob("*"))


def test_a_body_past_the_upload_gate_is_413_before_it_is_read(api, widget):
    response = upload(api(), "huge.bin", b"\0" * (MAX + 128 * 1024), "application/octet-stream")
    body = assert_problem(response, 413, "body_too_large")
    assert "exceeds" in body["detail"]
    assert not File.objects.exists()


def test_a_json_body_keeps_the_ordinary_api_cap(api, widget, settings):
    big = "https://example.com/" + "a" * (settings.API_MAX_BODY_BYTES + 10)
    assert_problem(fetch(api(), big), 413, "body_too_large")


@pytest.mark.parametrize(
    "parts",
    [
        [("file", "a.txt", b"x", "text/plain"), ("url", None, b"https://example.com/a.txt", None)],
        [("other", None, b"x", None)],
        [("file", "a.txt", b"x", "text/plain"), ("file", "b.txt", b"y", "text/plain")],
        [("file", "empty.txt", b"", "text/plain")],
        [("file", None, b"not a file part", None)],
    ],
    ids=["both", "unknown-field-only", "two-files", "empty-file", "file-as-text"],
)
def test_bad_multipart_is_422_and_stores_nothing(api, widget, parts):
    assert_problem(raw_multipart(api(), parts), 422, "validation_failed")
    assert not File.objects.exists()


def test_neither_file_nor_url_is_422(api, widget):
    body = assert_problem(api().post(FILES, {}, format="json", **idem()), 422, "validation_failed")
    assert "body" in body["errors"]


def test_file_member_in_json_is_422(api, widget):
    body = assert_problem(api().post(FILES, {"file": "aGVsbG8="}, format="json", **idem()), 422)
    assert "file" in body["errors"]


def test_upload_without_idempotency_key_is_400(api, widget):
    file = SimpleUploadedFile("a.txt", b"x")
    response = api().post(FILES, {"file": file}, format="multipart")
    assert_problem(response, 400, "idempotency_key_missing")
    assert not File.objects.exists()


def test_upload_with_a_reused_key_is_409(api, widget):
    client = api()
    key = {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": "same"}
    assert upload(client, **key).status_code == 201
    body = assert_problem(upload(client, **key), 409, "idempotency_key_reused")
    assert body["previous"]["status"] == 201
    assert File.objects.count() == 1


def test_upload_without_token_is_401(client, widget):
    file = SimpleUploadedFile("a.txt", b"x")
    assert_problem(client.post(FILES, {"file": file}, **idem()), 401)


def test_upload_without_scope_is_403(api, widget):
    body = assert_problem(upload(api(scopes=["files:read"])), 403, "missing_scope")
    assert body["required_scopes"] == ["files:write"]


def test_upload_as_plain_text_is_415(api, widget):
    response = api().generic("POST", FILES, b"hello", content_type="text/plain", **idem())
    assert_problem(response, 415)


# --- POST /v1/files: fetch by url --------------------------------------------------------------------


def test_url_is_fetched_and_stored(api, widget, remote):
    # when
    response = fetch(api(scopes=["files:write"]), remote.url("/docs/report.pdf?sig=abc"))
    # then
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["name"], body["content_type"], body["size"]) == ("report.pdf", "application/pdf", len(PDF))
    assert stored_bytes(body["id"]) == PDF


def test_url_name_is_decoded_and_parameters_of_the_type_dropped(api, widget, remote):
    body = fetch(api(), remote.url("/docs/%D0%BE%D1%82%D1%87%D1%91%D1%82.txt")).json()
    assert (body["name"], body["content_type"]) == ("отчёт.txt", "text/plain")


def test_bogus_response_type_falls_back_to_octet_stream(api, widget, remote):
    assert fetch(api(), remote.url("/untyped")).json()["content_type"] == "application/octet-stream"


def test_one_redirect_hop_on_loopback_is_followed(api, widget, remote):
    response = fetch(api(), remote.url("/redirect?to=/docs/report.pdf"))
    assert response.status_code == 201, response.content
    assert response.json()["name"] == "report.pdf"


@pytest.mark.parametrize(
    "target",
    [
        "https://10.0.0.1/x",
        "https://169.254.169.254/latest/meta-data/",
        "https://[::ffff:10.0.0.1]/x",
        "http://example.com/a.pdf",
        "ftp://example.com/a.pdf",
        "https://user:pass@example.com/a.pdf",
        "not a url",
        "/relative/path",
    ],
)
def test_refused_urls_are_422_at_url(api, widget, settings, target):
    settings.OUTBOUND_ALLOW_LOOPBACK = True  # loopback open must not open anything else
    body = assert_problem(fetch(api(), target), 422, "validation_failed")
    assert list(body["errors"]) == ["url"]
    assert not File.objects.exists()


def test_loopback_is_refused_when_not_switched_on(api, widget, remote, settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    body = assert_problem(fetch(api(), remote.url("/docs/report.pdf")), 422)
    assert "url" in body["errors"]


@pytest.mark.parametrize(
    "to",
    ["https://10.0.0.1/x", "https://169.254.169.254/latest/meta-data/", None],
    ids=["private", "metadata", "second-hop"],
)
def test_redirect_to_a_refused_address_or_a_second_hop_is_422(api, widget, remote, to):
    to = to or remote.url("/redirect?to=/docs/report.pdf")
    body = assert_problem(fetch(api(), remote.url(f"/redirect?to={to}")), 422)
    assert "url" in body["errors"]
    assert not File.objects.exists()


@pytest.mark.parametrize("path", ["/error", "/nothing-here", "/empty"])
def test_non_2xx_or_empty_answers_are_422(api, widget, remote, path):
    body = assert_problem(fetch(api(), remote.url(path)), 422)
    assert "url" in body["errors"]


def test_response_over_10_mb_is_422(api, widget, remote):
    body = assert_problem(fetch(api(), remote.url(f"/big?n={MAX + 1}")), 422)
    assert "10485760" in body["errors"]["url"][0]
    assert not File.objects.exists()


def test_unreachable_url_is_422(api, widget, remote):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed_port = sock.getsockname()[1]
    body = assert_problem(fetch(api(), f"https://127.0.0.1:{closed_port}/x"), 422)
    assert "url" in body["errors"]


def test_untrusted_certificate_is_422(api, widget, remote, monkeypatch):
    monkeypatch.delenv("REQUESTS_CA_BUNDLE")
    body = assert_problem(fetch(api(), remote.url("/docs/report.pdf")), 422)
    assert "url" in body["errors"]


# --- GET /v1/files/{id} and the download route ---------------------------------------------------------


def test_retrieve_redirects_to_a_signed_url_that_serves_the_same_bytes(api, widget, client):
    # given
    content = bytes(range(256)) * 10
    file_id = upload(api(), "data.bin", content, "application/octet-stream").json()["id"]
    # when
    response = api(scopes=["files:read"]).get(f"{FILES}/{file_id}")
    # then
    assert response.status_code == 302
    assert response["Location"].startswith("http://testserver/api/files/")
    downloaded = download(client, response)
    assert downloaded.status_code == 200
    assert body_of(downloaded) == content
    assert downloaded["Content-Type"] == "application/octet-stream"
    assert downloaded["Content-Disposition"].startswith("attachment;")
    assert "filename*=UTF-8''data.bin" in downloaded["Content-Disposition"]
    assert downloaded["X-Content-Type-Options"] == "nosniff"
    assert downloaded["Cache-Control"].startswith("private")


def test_download_of_html_is_an_attachment_never_rendered(api, widget, client):
    file_id = upload(api(), "page.html", b"<script>alert(1)</script>", "text/html").json()["id"]
    downloaded = headers_of(download(client, api().get(f"{FILES}/{file_id}")))
    assert downloaded["Content-Disposition"].startswith("attachment;")
    assert downloaded["X-Content-Type-Options"] == "nosniff"
    assert "sandbox" in downloaded["Content-Security-Policy"]


def test_download_name_is_encoded_for_non_ascii_and_quotes(api, widget, client):
    file_id = upload(api(), 'отчёт "q".txt', b"x").json()["id"]
    disposition = headers_of(download(client, api().get(f"{FILES}/{file_id}")))["Content-Disposition"]
    assert "filename*=UTF-8''%D0%BE%D1%82%D1%87%D1%91%D1%82%20%22q%22.txt" in disposition
    assert '\\"' not in disposition and "\n" not in disposition


def test_retrieve_of_a_foreign_file_is_the_same_404_as_a_missing_one(api, widget, other_widget):
    # given
    foreign_id = upload(api(w=other_widget)).json()["id"]
    client = api()
    # when
    a = assert_problem(client.get(f"{FILES}/{foreign_id}"), 404, "not_found")
    b = assert_problem(client.get(f"{FILES}/{foreign_id + 1000}"), 404, "not_found")
    c = assert_problem(client.get(f"{FILES}/not-a-number"), 404, "not_found")
    # then
    for body in (a, b, c):
        body.pop("instance")
    assert a == b == c


def test_retrieve_without_token_is_401(client, api, widget):
    file_id = upload(api()).json()["id"]
    assert_problem(client.get(f"{FILES}/{file_id}"), 401)


def test_retrieve_without_scope_is_403(api, widget):
    file_id = upload(api()).json()["id"]
    body = assert_problem(api(scopes=["files:write"]).get(f"{FILES}/{file_id}"), 403, "missing_scope")
    assert body["required_scopes"] == ["files:read"]


def test_list_of_files_is_not_served(api, widget):
    assert_problem(api().get(FILES), 405)


def test_tampered_token_is_404(api, widget, client):
    file_id = upload(api()).json()["id"]
    path = urlsplit(api().get(f"{FILES}/{file_id}")["Location"]).path
    tampered = path[:-3] + ("AAA" if not path.endswith("AAA") else "BBB")
    assert_problem(client.get(tampered), 404, "not_found")
    assert_problem(client.get("/api/files/garbage"), 404, "not_found")


def test_expired_token_is_404(api, widget, client, monkeypatch):
    # given: a URL signed just over five minutes ago
    file = File.objects.get(pk=upload(api()).json()["id"])
    issued_at = int(signing.time.time()) - 301
    with monkeypatch.context() as m:
        m.setattr(signing.TimestampSigner, "timestamp", lambda self: signing.b62_encode(issued_at))
        path = signed_file_url(file)
    # when / then
    assert_problem(client.get(path), 404, "not_found")


def test_token_of_a_deleted_file_is_404(api, widget, client):
    file = File.objects.get(pk=upload(api()).json()["id"])
    path = signed_file_url(file)
    file.stored.delete(save=False)
    assert_problem(client.get(path), 404, "not_found")
    file.delete()
    assert_problem(client.get(path), 404, "not_found")


def test_a_storage_other_than_s3_is_served_through_the_download_route(api, client, settings):
    # given an object storage whose URLs carry no response headers (Django's in-memory storage here)
    settings.STORAGES = {**settings.STORAGES, "default": {"BACKEND": "django.core.files.storage.InMemoryStorage"}}
    file = File.objects.get(pk=upload(api(), "notes.txt", b"plain words", "text/plain").json()["id"])
    # when its URL is signed, then it is our download route, which answers an attachment of the type
    path = signed_file_url(file)
    assert path.startswith("/api/files/")
    response = client.get(path)
    assert response.status_code == 200 and b"".join(response.streaming_content) == b"plain words"
    assert response["Content-Disposition"].startswith("attachment") and response["Content-Type"] == "text/plain"
    assert response["X-Content-Type-Options"] == "nosniff"


def test_download_route_refuses_writes(api, widget, client):
    file = File.objects.get(pk=upload(api()).json()["id"])
    assert_problem(client.post(signed_file_url(file)), 405)


def test_download_streams_block_by_block(api, widget, rf):
    from apps.chats.api.files import download as download_view

    # given
    content = b"0123456789abcdef" * 4096  # 64 KiB: many of FileResponse's blocks
    file = File.objects.get(pk=upload(api(), "data.bin", content, "application/octet-stream").json()["id"])
    token = urlsplit(signed_file_url(file)).path.rsplit("/", 1)[-1]
    response = download_view(rf.get("/"), token)

    # when
    parts = list(response.streaming_content)
    response.close()
    # then
    assert response.streaming
    assert len(parts) > 1
    assert b"".join(parts) == content
