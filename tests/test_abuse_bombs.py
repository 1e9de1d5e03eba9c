"""Decompression bombs against the web process as `make run` starts it (the Procfile's `web`), part of
the abuse run CI does in both suite runs: a docx whose `mimetype` or `word/document.xml` inflates to
hundreds of MiB, uploaded to the knowledge base and sent by a visitor as an attachment a support agent
opens. Each answers the route's documented error for an unreadable document; the run fails on any 5xx
and on server memory growth over 100 MB.
"""

from __future__ import annotations

import json

import pytest
import requests

from tests.core import bombs
from tests.live import manage

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]  # django_db: the plugin's autouse fixtures want it

RSS_GROWTH_LIMIT_KIB = 100 * 1024
MIB = 1024 * 1024
BOMBS = {
    "mimetype": bombs.docx_with_bomb("mimetype", 400 * MIB),
    "document": bombs.docx_with_bomb("word/document.xml", 400 * MIB),
    "liar": bombs.docx_with_bomb("word/document.xml", 400 * MIB, lie=1000),
}


def _configure_support(var_dir, seed: dict) -> None:
    config = {
        "enabled": True,
        "operator_agent_id": seed["owner_agent_id"],
        "allowed_tokens": [seed["token"][:12]],
        "ip_allowlist": ["127.0.0.1/32", "::1/128"],
        "channels": ["widget"],
    }
    manage(var_dir, "configure_support", "--widget", str(seed["widget_id"]), "--config", json.dumps(config))


def test_document_bombs_are_refused_without_5xx_or_memory_growth(start_server, live_var, live_template):
    _configure_support(live_var, live_template.seed)
    server = start_server()
    api = {"Authorization": f"Bearer {server.seed['token']}"}
    visitor = {"Authorization": f"Visitor {server.visitor_session()}"}
    guid = server.seed["button_guid"]
    before = server.rss_kib()
    statuses: list[tuple[str, int]] = []

    # the knowledge base: the upload request reads the archive's directory only, and refuses a bomb
    for n, (kind, data) in enumerate(BOMBS.items()):
        response = requests.post(
            server.url("/api/v1/kb/uploads"),
            files={"file": (f"{kind}.docx", data)},
            headers={**api, "X-Service-Idempotency-Key": f"bomb-{n}"},
            timeout=30,
        )
        statuses.append((f"kb upload {kind}", response.status_code))
        if kind == "liar":  # its directory looks honest: accepted, and refused by the ingestion
            assert response.status_code == 202, response.text
        else:
            assert response.status_code == 422, response.text
            assert response.json()["code"] == "kb_unsupported_document"

    # a visitor's attachment, opened by a support agent
    for kind, data in BOMBS.items():
        uploaded = requests.post(
            server.url(f"/api/visitor/v1/{guid}/files"),
            files={"file": (f"{kind}.docx", data)},
            headers=visitor,
            timeout=30,
        )
        assert uploaded.status_code == 201, uploaded.text
        sent = requests.post(
            server.url(f"/api/visitor/v1/{guid}/messages"),
            json={"type": "file", "file_id": uploaded.json()["id"]},
            headers=visitor,
            timeout=30,
        )
        assert sent.status_code == 201, sent.text
        message = sent.json()
        response = requests.get(
            server.url(f"/api/v1/support/chats/{message['chat_id']}/messages/{message['id']}/attachment"),
            headers=api,
            timeout=60,
        )
        statuses.append((f"support attachment {kind}", response.status_code))
        assert response.status_code == 415, response.text
        assert response.json()["code"] == "unsupported_media_type"

    # then nothing answered 5xx, the server still answers, and it did not grow by 100 MB
    errors = [(what, status) for what, status in statuses if status >= 500]
    assert not errors, errors
    assert requests.get(server.url("/healthz"), timeout=10).status_code == 200
    grown = server.rss_kib() - before
    print(f"bombs: {len(statuses)} requests, server RSS {before // 1024} MB -> {(before + grown) // 1024} MB")
    assert grown < RSS_GROWTH_LIMIT_KIB, f"server RSS grew by {grown // 1024} MB"
    assert "Traceback" not in server.output(), server.output()[-3000:]


def test_a_gzip_bomb_from_the_embedding_provider_fails_a_rule_write_without_memory_growth(
    start_server, live_var, live_template
):
    from tests.llm_fake import FakeLLM, ca_path, odd_answer

    with FakeLLM("openai") as fake:
        seed = live_template.seed
        manage(
            live_var,
            "shell",
            "-c",
            "from apps.ai.tests.factories import CredentialFactory\n"
            "from apps.core.models import Widget\n"
            f"CredentialFactory(widget=Widget.objects.get(pk={seed['widget_id']}), "
            f"api_key={fake.api_key!r}, base_url={fake.base_url!r})\n",
        )
        server = start_server(OUTBOUND_ALLOW_LOOPBACK="1", REQUESTS_CA_BUNDLE=ca_path())
        api = {"Authorization": f"Bearer {server.seed['token']}"}
        statuses: list[tuple[str, int]] = []
        before = 0
        # The first write loads the provider libraries into the process: memory is measured from after it.
        for n in range(4):
            if n == 1:
                before = server.rss_kib()
            # given the provider answering every embedding with ~11 KB of gzip that inflates past the cap
            fake.script(*[odd_answer("openai", "gzip_bomb")] * 4, path="/embeddings")
            # when a rule is written (embedded in the request)
            response = requests.post(
                server.url("/api/v1/kb/rules"),
                json={"content": f"Delivery takes one day ({n})."},
                headers={**api, "X-Service-Idempotency-Key": f"rule-bomb-{n}"},
                timeout=60,
            )
            statuses.append(("kb rule", response.status_code))
            # then the documented provider failure, nothing stored
            assert response.status_code == 502, response.text
            assert response.json()["code"] == "kb_embed_provider_failed"
            assert any(hit.path.endswith("/embeddings") for hit in fake.requests)
            fake.reset()
    assert requests.get(server.url("/api/v1/kb/rules"), headers=api, timeout=10).json()["data"] == []
    grown = server.rss_kib() - before
    print(f"provider bombs: server RSS {before // 1024} MB -> {(before + grown) // 1024} MB")
    assert grown < RSS_GROWTH_LIMIT_KIB, f"server RSS grew by {grown // 1024} MB"
    assert "Traceback" not in server.output(), server.output()[-3000:]
