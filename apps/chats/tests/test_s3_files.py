"""Chat files on an S3-compatible STORAGE_BACKEND, against a real S3 implementation on loopback
(moto's server): the signed URL makes the store answer with the stored Content-Type as an
attachment, for new uploads and for objects stored before; public assets stay plain URLs."""

import json
import time
import uuid
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit
from urllib.request import ProxyHandler, build_opener

import boto3
import pytest
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import get_resolver
from moto.server import ThreadedMotoServer

from apps.agents.tests.factories import AgentFactory
from apps.chats.models import File
from apps.chats.payloads import signed_file_url

pytestmark = pytest.mark.django_db

BUCKET = "chat-files"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
PAGE = b"<!doctype html><script>alert(document.domain)</script>"
SVG = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    s3_client(endpoint).create_bucket(Bucket=BUCKET)
    yield endpoint
    server.stop()


def s3_client(endpoint: str):
    return boto3.client(
        "s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test"
    )


@pytest.fixture(autouse=True)
def s3_storage(settings, s3_endpoint):
    """STORAGE_BACKEND set to django-storages' S3 backend, its options pointing at the moto server."""
    # config.urls picks its /media/ route by STORAGES when first imported: import it under the
    # default first, so later test modules find the route they expect
    get_resolver().url_patterns  # noqa: B018
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": BUCKET,
                "endpoint_url": s3_endpoint,
                "region_name": "us-east-1",
                "access_key": "test",
                "secret_key": "test",
                "addressing_style": "path",
                "location": f"t-{uuid.uuid4().hex[:12]}",
            },
        },
    }


def get_from_store(url: str):
    """GET `url` (the store's own URL) directly, as a browser would, bypassing any proxy."""
    assert urlsplit(url).hostname == "127.0.0.1", url
    response = build_opener(ProxyHandler({})).open(url, timeout=10)
    with response:
        return response.status, response.headers, response.read()


def visitor_upload(client, widget, name: str, content: bytes, content_type: str) -> int:
    base = f"/api/visitor/v1/{widget.button_guid}"
    session = client.post(f"{base}/sessions", json.dumps({"name": "Anna"}), content_type="application/json")
    assert session.status_code == 201, session.content
    response = client.post(
        f"{base}/files",
        {"file": SimpleUploadedFile(name, content, content_type=content_type)},
        HTTP_AUTHORIZATION=f"Visitor {session.json()['session_token']}",
    )
    assert response.status_code == 201, response.content
    return response.json()["id"]


@pytest.mark.parametrize(
    "name, content, content_type",
    [("page.html", PAGE, "text/html"), ("drawing.svg", SVG, "image/svg+xml")],
)
def test_a_visitors_upload_is_served_by_the_store_as_an_attachment(client, api, widget, name, content, content_type):
    # given a visitor's upload, stored in the bucket
    file_id = visitor_upload(client, widget, name, content, content_type)
    assert File.objects.get(pk=file_id).stored.storage.exists(File.objects.get(pk=file_id).stored.name)
    # when an operator opens it: GET /v1/files/{id} redirects to the store's signed URL
    response = api(scopes=["files:read"]).get(f"/api/v1/files/{file_id}")
    assert response.status_code == 302, response.content
    status, headers, body = get_from_store(response["Location"])
    # then the store answers the bytes as a download of the stored type, never as a page
    assert status == 200 and body == content
    assert headers["Content-Disposition"].startswith(f'attachment; filename="{name}"')
    assert headers["Content-Type"] == content_type


def test_an_object_stored_before_is_served_with_the_stored_type_as_an_attachment(widget, s3_endpoint, settings):
    # given an object put in the bucket with an inline-renderable type and no disposition (as every
    # upload before this rule), whose row records another type
    file = File.objects.create(
        widget=widget,
        stored=ContentFile(b"x", name="old.txt"),
        original_name="old.txt",
        content_type="text/plain",
        size=1,
    )
    key = f"{settings.STORAGES['default']['OPTIONS']['location']}/{file.stored.name}"
    s3_client(s3_endpoint).put_object(Bucket=BUCKET, Key=key, Body=PAGE, ContentType="text/html")
    # when its signed URL is fetched
    status, headers, body = get_from_store(signed_file_url(file))
    # then the answer is the row's type, as an attachment
    assert status == 200 and body == PAGE
    assert headers["Content-Type"] == "text/plain"
    assert headers["Content-Disposition"].startswith('attachment; filename="old.txt"')


def test_the_signed_url_keeps_the_requested_lifetime_and_a_non_ascii_name(widget):
    file = File.objects.create(
        widget=widget, stored=ContentFile(b"x", name="a.pdf"), original_name="отчёт 1.pdf", content_type="", size=1
    )
    url = signed_file_url(file, max_age=120)
    query = parse_qs(urlsplit(url).query)
    # SigV4 names the lifetime, SigV2 (what botocore signs with here) the moment it ends
    lifetime = int(query["X-Amz-Expires"][0]) if "X-Amz-Expires" in query else int(query["Expires"][0]) - time.time()
    assert 110 <= lifetime <= 120
    assert query["response-content-type"] == ["application/octet-stream"]
    status, headers, _ = get_from_store(url)
    assert status == 200 and headers["Content-Type"] == "application/octet-stream"
    assert headers["Content-Disposition"].endswith("filename*=UTF-8''%D0%BE%D1%82%D1%87%D1%91%D1%82%201.pdf")


def test_public_assets_keep_plain_urls_an_img_can_show(api, widget):
    # given an operator's avatar uploaded to the same store
    agent = AgentFactory(widget=widget)
    response = api().post(
        f"/api/v1/agents/{agent.pk}/avatar",
        {"file": SimpleUploadedFile("me.png", PNG)},
        format="multipart",
        HTTP_X_SERVICE_IDEMPOTENCY_KEY=f"key-{uuid.uuid4().hex}",
    )
    assert response.status_code == 201, response.content
    avatar_url = response.json()["avatar_url"]
    # then its URL asks for no download and the store answers the image as the image it is
    assert "response-content-disposition" not in avatar_url
    status, headers, body = get_from_store(avatar_url)
    assert status == 200 and body == PNG
    assert headers["Content-Type"] == "image/png"
    assert "attachment" not in headers.get("Content-Disposition", "")
