"""POST/DELETE /v1/agents/{id}/avatar."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.agents.api.serializers import AVATAR_MAX_BYTES, sniff_image
from apps.agents.models import Agent, AgentEvent
from apps.agents.tests.conftest import idem
from apps.agents.tests.factories import AgentFactory
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 64
GIF = b"GIF89a" + b"\x00" * 64
WEBP = b"RIFF\x24\x00\x00\x00WEBPVP8 " + b"\x00" * 64


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    return tmp_path


def upload(client, agent, name, content, **extra):
    return client.post(
        f"/api/v1/agents/{agent.pk}/avatar",
        {"file": SimpleUploadedFile(name, content)},
        format="multipart",
        **{**idem(), **extra},
    )


@pytest.mark.parametrize(
    "name, content, stored_ext",
    [
        ("a.png", PNG, "png"),
        ("a.jpg", JPEG, "jpg"),
        ("a.JPEG", JPEG, "jpg"),
        ("a.gif", GIF, "gif"),
        ("a.webp", WEBP, "webp"),
    ],
)
def test_every_allowed_type_is_stored_and_answered_201(api, widget, purges, name, content, stored_ext):
    agent = AgentFactory(widget=widget)
    response = upload(api(scopes=["agents:write"]), agent, name, content)
    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"avatar_url"} and body["avatar_url"].endswith(f".{stored_ext}")
    agent.refresh_from_db()
    assert agent.avatar.read() == content
    assert widget.pk in purges


def test_the_avatar_url_is_on_the_agent(api, widget):
    agent = AgentFactory(widget=widget)
    client = api()
    avatar_url = upload(client, agent, "me.png", PNG).json()["avatar_url"]
    assert avatar_url.startswith("http://testserver/")
    assert client.get(f"/api/v1/agents/{agent.pk}").json()["avatar_url"] == avatar_url
    assert client.get("/api/v1/agents").json()["data"][0]["avatar_url"] == avatar_url
    assert "me" not in avatar_url.rsplit("/", 1)[-1]  # stored under a random name


def test_a_new_avatar_replaces_the_old_file(api, widget, media, django_capture_on_commit_callbacks):
    agent = AgentFactory(widget=widget)
    client = api()
    upload(client, agent, "a.png", PNG)
    agent.refresh_from_db()
    old = agent.avatar.path
    with django_capture_on_commit_callbacks(execute=True):
        upload(client, agent, "b.gif", GIF)
    import os

    assert not os.path.exists(old)


@pytest.mark.parametrize(
    "name, content",
    [
        ("a.png", b"<html><script>alert(1)</script></html>"),  # the name lies
        ("a.svg", b"<svg xmlns='http://www.w3.org/2000/svg'/>"),
        ("a.svg", PNG),  # the content is fine, the type is not allowed
        ("a.png", JPEG),  # name and content disagree
        ("avatar", PNG),  # no extension
        ("a.bmp", b"BM" + b"\x00" * 64),
    ],
)
def test_a_wrong_type_is_422_at_file(api, widget, name, content):
    agent = AgentFactory(widget=widget)
    body = assert_problem(upload(api(), agent, name, content), 422, "validation_failed")
    assert set(body["errors"]) == {"file"}
    agent.refresh_from_db()
    assert not agent.avatar


def test_an_empty_file_is_422(api, widget):
    body = assert_problem(upload(api(), AgentFactory(widget=widget), "a.png", b""), 422)
    assert "file" in body["errors"]


def test_a_file_over_2048_kb_is_422(api, widget):
    content = PNG + b"\x00" * (AVATAR_MAX_BYTES - len(PNG) + 1)
    body = assert_problem(upload(api(), AgentFactory(widget=widget), "a.png", content), 422)
    assert "2048 KB" in body["errors"]["file"][0]


def test_a_file_of_exactly_2048_kb_is_accepted(api, widget):
    content = PNG + b"\x00" * (AVATAR_MAX_BYTES - len(PNG))
    assert upload(api(), AgentFactory(widget=widget), "a.png", content).status_code == 201


def test_a_body_over_the_transport_cap_is_413(api, widget):
    from apps.agents.api.views import AVATAR_BODY_BYTES

    content = PNG + b"\x00" * AVATAR_BODY_BYTES
    assert_problem(upload(api(), AgentFactory(widget=widget), "a.png", content), 413, "body_too_large")


def test_missing_file_or_extra_members_are_422(api, widget):
    agent = AgentFactory(widget=widget)
    client = api()
    no_file = client.post(f"/api/v1/agents/{agent.pk}/avatar", {}, format="multipart", **idem())
    assert "file" in assert_problem(no_file, 422)["errors"]
    extra = client.post(
        f"/api/v1/agents/{agent.pk}/avatar",
        {"file": SimpleUploadedFile("a.png", PNG), "colour": "red"},
        format="multipart",
        **idem(),
    )
    assert "colour" in assert_problem(extra, 422)["errors"]


def test_json_instead_of_multipart_is_refused(api, widget):
    agent = AgentFactory(widget=widget)
    response = api().post(f"/api/v1/agents/{agent.pk}/avatar", {"file": "x"}, format="json", **idem())
    assert_problem(response, 415)


def test_upload_needs_an_idempotency_key(api, widget):
    agent = AgentFactory(widget=widget)
    response = api().post(
        f"/api/v1/agents/{agent.pk}/avatar", {"file": SimpleUploadedFile("a.png", PNG)}, format="multipart"
    )
    assert_problem(response, 400, "idempotency_key_missing")


def test_upload_for_a_foreign_agent_is_404(api, other_widget):
    agent = AgentFactory(widget=other_widget)
    assert_problem(upload(api(), agent, "a.png", PNG), 404)
    agent.refresh_from_db()
    assert not agent.avatar


def test_avatar_routes_need_agents_write(api, widget):
    agent = AgentFactory(widget=widget)
    client = api(scopes=["agents:read"])
    assert_problem(upload(client, agent, "a.png", PNG), 403, "missing_scope")
    assert_problem(client.delete(f"/api/v1/agents/{agent.pk}/avatar"), 403, "missing_scope")


def test_storage_failure_is_502_and_changes_nothing(api, widget, monkeypatch):
    from django.db.models.fields.files import FieldFile

    def broken(self, *args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(FieldFile, "save", broken)
    agent = AgentFactory(widget=widget)
    assert_problem(upload(api(), agent, "a.png", PNG), 502, "avatar_store_failed")
    assert not AgentEvent.objects.filter(agent=agent).exists()


def test_delete_removes_the_avatar_without_an_idempotency_key(api, widget, purges):
    agent = AgentFactory(widget=widget)
    client = api()
    upload(client, agent, "a.png", PNG)
    purges.clear()
    response = client.delete(f"/api/v1/agents/{agent.pk}/avatar")
    assert response.status_code == 204
    agent.refresh_from_db()
    assert not agent.avatar
    assert client.get(f"/api/v1/agents/{agent.pk}").json()["avatar_url"] is None
    assert purges and purges[0] == widget.pk


def test_delete_without_an_avatar_is_204_and_still_purges(api, widget, purges):
    agent = AgentFactory(widget=widget)
    assert api().delete(f"/api/v1/agents/{agent.pk}/avatar").status_code == 204
    assert widget.pk in purges


def test_delete_for_a_foreign_agent_is_404(api, other_widget):
    assert_problem(api().delete(f"/api/v1/agents/{AgentFactory(widget=other_widget).pk}/avatar"), 404)


def test_avatar_changes_are_logged(api, widget):
    from apps.agents.events_log import slug_of

    agent = AgentFactory(widget=widget)
    client = api()
    upload(client, agent, "a.png", PNG)
    client.delete(f"/api/v1/agents/{agent.pk}/avatar")
    assert [slug_of(e.type_code) for e in AgentEvent.objects.filter(agent=agent).order_by("id")] == [
        "avatar_set",
        "avatar_removed",
    ]


def test_a_banned_agent_can_still_get_an_avatar(api, widget):
    agent = AgentFactory(widget=widget, status=Agent.Status.BANNED)
    assert upload(api(), agent, "a.png", PNG).status_code == 201


@pytest.mark.parametrize(
    "head, kind",
    [
        (PNG, "png"),
        (JPEG, "jpeg"),
        (GIF, "gif"),
        (b"GIF87a....", "gif"),
        (WEBP, "webp"),
        (b"RIFF\x00\x00\x00\x00WAVE", None),
        (b"", None),
        (b"%PDF-1.7", None),
    ],
)
def test_sniff_image_reads_magic_bytes(head, kind):
    assert sniff_image(head[:16]) == kind
