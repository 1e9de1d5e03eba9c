"""Rules: write, edit, read, browse, delete one and a source's."""

import pytest

from apps.core.models import IdempotencyKey
from apps.kb import services
from apps.kb.models import KbChunk, KbIndex
from apps.kb.testing import OfflineHooks
from apps.kb.tests.conftest import idem

RULES = "/api/v1/kb/rules"
pytestmark = pytest.mark.django_db


def write(client, body, **extra):
    return client.post(RULES, body, format="json", **{**idem(), **extra})


def test_write_a_rule_embeds_it_and_makes_it_searchable(kb, widget, offline):
    response = write(kb, {"content": "Доставка по Москве занимает один день.", "doc_id": "faq-1"})
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["source_ref"] == f"manual:{body['id']}" and body["regenerates"] is False
    assert body["doc_id"] == "faq-1" and body["chunk_index"] == 0 and body["button_id"] is None
    rule = KbChunk.objects.get(pk=body["id"], widget=widget)
    assert rule.embedding_model == offline.model and len(bytes(rule.embedding)) == 4 * offline.dimensions
    found = kb.get("/api/v1/kb/search", {"q": "сколько идёт доставка"}).json()["data"]
    assert found[0]["id"] == body["id"]


def test_write_needs_the_idempotency_key_and_refuses_its_reuse(kb, offline, assert_problem):
    assert_problem(kb.post(RULES, {"content": "x"}, format="json"), 400)
    headers = idem()
    assert kb.post(RULES, {"content": "Правило"}, format="json", **headers).status_code == 201
    assert_problem(kb.post(RULES, {"content": "Правило"}, format="json", **headers), 409)
    assert KbChunk.objects.count() == 1


def test_write_refuses_read_only_fields_by_name(kb, offline, assert_problem):
    body = assert_problem(
        write(kb, {"content": "x", "source_ref": "manual:1", "chunk_index": 0}), 422, "kb_read_only_field"
    )
    assert set(body["errors"]) == {"source_ref", "chunk_index"}
    assert not KbChunk.objects.exists()


def test_a_rule_read_by_get_cannot_be_sent_back_whole(kb, offline, assert_problem):
    rule = write(kb, {"content": "Гарантия 12 месяцев"}).json()
    read = kb.get(f"{RULES}/{rule['id']}").json()
    body = assert_problem(kb.patch(f"{RULES}/{rule['id']}", read, format="json", **idem()), 422, "kb_read_only_field")
    assert "id" in body["errors"] and "regenerates" in body["errors"]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"content": ""},
        {"content": "   "},
        {"content": 5},
        {"content": "x" * 4001},
        {"content": "a\x00b"},
        {"content": "ok", "doc_id": "d" * 201},
        {"content": "ok", "unknown": 1},
        ["content"],
    ],
)
def test_write_refuses_bad_input(kb, offline, assert_problem, body):
    assert_problem(write(kb, body), 422)
    assert not KbChunk.objects.exists()


def test_write_refuses_a_body_that_is_not_json(kb, offline, assert_problem):
    assert_problem(kb.post(RULES, "content=x", content_type="application/x-www-form-urlencoded", **idem()), 415)


def test_provider_failure_is_502_stores_nothing_and_releases_the_key(kb, widget, assert_problem):
    failing = OfflineHooks(fail="server_error")
    headers = idem()
    with services.hooks.use_hooks(failing):
        assert_problem(write(kb, {"content": "Правило"}, **headers), 502, "kb_embed_provider_failed")
    assert not KbChunk.objects.exists() and not IdempotencyKey.objects.exists()
    with services.hooks.use_hooks(OfflineHooks()):
        assert write(kb, {"content": "Правило"}, **headers).status_code == 201


def test_no_credential_able_to_embed_is_502(kb, assert_problem):
    with services.hooks.use_hooks(OfflineHooks(can_embed=False)):
        body = assert_problem(write(kb, {"content": "Правило"}), 502, "kb_embed_provider_failed")
    assert "credential" in body["detail"]


def test_edit_content_re_embeds_and_doc_id_alone_does_not(kb, widget, offline):
    rule = write(kb, {"content": "Доставка бесплатно"}).json()
    calls = offline.calls
    response = kb.patch(f"{RULES}/{rule['id']}", {"doc_id": "new"}, format="json", **idem())
    assert response.status_code == 200 and response.json()["doc_id"] == "new"
    assert offline.calls == calls
    before = bytes(KbChunk.objects.get(pk=rule["id"]).embedding)
    response = kb.patch(f"{RULES}/{rule['id']}", {"content": "Гарантия два года"}, format="json", **idem())
    assert response.status_code == 200 and response.json()["content"] == "Гарантия два года"
    assert offline.calls == calls + 1 and bytes(KbChunk.objects.get(pk=rule["id"]).embedding) != before


def test_edit_with_a_failing_provider_changes_nothing(kb, assert_problem, offline):
    rule = write(kb, {"content": "Доставка бесплатно"}).json()
    with services.hooks.use_hooks(OfflineHooks(fail="timeout")):
        assert_problem(
            kb.patch(f"{RULES}/{rule['id']}", {"content": "Другое"}, format="json", **idem()),
            502,
            "kb_embed_provider_failed",
        )
    assert KbChunk.objects.get(pk=rule["id"]).content == "Доставка бесплатно"


def test_edit_refuses_an_empty_patch_and_bad_input(kb, offline, assert_problem):
    rule = write(kb, {"content": "x"}).json()
    assert_problem(kb.patch(f"{RULES}/{rule['id']}", {}, format="json", **idem()), 422)
    assert_problem(kb.patch(f"{RULES}/{rule['id']}", {"content": ""}, format="json", **idem()), 422)
    assert_problem(
        kb.patch(f"{RULES}/{rule['id']}", {"button_id": "b"}, format="json", **idem()), 422, "kb_read_only_field"
    )
    assert_problem(kb.patch(f"{RULES}/{rule['id']}", {"doc_id": "x"}, format="json"), 400)


def test_foreign_and_missing_rules_are_the_same_404(kb, api, other_widget, offline, assert_problem):
    foreign = write(api(["kb:read", "kb:write"], w=other_widget), {"content": "чужое"}).json()
    for pk in (foreign["id"], foreign["id"] + 1000):
        assert_problem(kb.get(f"{RULES}/{pk}"), 404, "not_found")
        assert_problem(kb.patch(f"{RULES}/{pk}", {"doc_id": "x"}, format="json", **idem()), 404, "not_found")
        assert_problem(kb.delete(f"{RULES}/{pk}"), 404, "not_found")
    assert KbChunk.objects.filter(pk=foreign["id"]).exists()


def test_delete_one_rule_removes_it_from_search(kb, widget, offline):
    rule = write(kb, {"content": "Самовывоз с Тверской"}).json()
    version = KbIndex.objects.get(widget=widget).version
    assert kb.get("/api/v1/kb/search", {"q": "самовывоз"}).json()["data"]
    assert kb.delete(f"{RULES}/{rule['id']}").status_code == 204
    assert KbIndex.objects.get(widget=widget).version == version + 1
    assert kb.get("/api/v1/kb/search", {"q": "самовывоз"}).json()["data"] == []


def test_delete_a_source_deletes_its_rules_only(kb, widget, offline, assert_problem):
    a = write(kb, {"content": "первое"}).json()
    b = write(kb, {"content": "второе"}).json()
    assert_problem(kb.delete(RULES), 422)
    response = kb.delete(f"{RULES}?source_ref={a['source_ref']}")
    assert response.status_code == 200 and response.json() == {"deleted": 1}
    assert list(KbChunk.objects.values_list("pk", flat=True)) == [b["id"]]
    assert kb.delete(f"{RULES}?source_ref=manual:0").json() == {"deleted": 0}


def test_delete_a_source_never_touches_another_widget(kb, api, other_widget, offline):
    foreign = write(api(["kb:read", "kb:write"], w=other_widget), {"content": "чужое"}).json()
    assert kb.delete(f"{RULES}?source_ref={foreign['source_ref']}").json() == {"deleted": 0}
    assert KbChunk.objects.filter(pk=foreign["id"]).exists()


def test_list_is_a_cursor_list_newest_first_with_a_source_filter(kb, offline, django_assert_max_num_queries):
    ids = [write(kb, {"content": f"правило {i}"}).json()["id"] for i in range(5)]
    with django_assert_max_num_queries(8):
        page = kb.get(RULES, {"limit": 3}).json()
    assert [r["id"] for r in page["data"]] == ids[::-1][:3]
    rest = kb.get(RULES, {"limit": 3, "cursor": page["next_cursor"]}).json()
    assert [r["id"] for r in rest["data"]] == ids[::-1][3:] and rest["next_cursor"] is None
    only = kb.get(RULES, {"source_ref": f"manual:{ids[0]}"}).json()["data"]
    assert [r["id"] for r in only] == [ids[0]]


@pytest.mark.parametrize("query", [{"limit": 0}, {"limit": 101}, {"cursor": "forged"}, {"status": "x"}])
def test_list_refuses_bad_parameters(kb, assert_problem, query):
    assert_problem(kb.get(RULES, query), 422)


def test_scopes(api, widget, offline, assert_problem):
    reader, writer = api(["kb:read"]), api(["kb:write"])
    assert_problem(write(reader, {"content": "x"}), 403, "missing_scope")
    assert_problem(writer.get(RULES), 403, "missing_scope")
    assert_problem(reader.delete(f"{RULES}?source_ref=manual:1"), 403, "missing_scope")
    rule = write(writer, {"content": "x"}).json()
    assert_problem(
        reader.patch(f"{RULES}/{rule['id']}", {"doc_id": "y"}, format="json", **idem()), 403, "missing_scope"
    )
    assert_problem(reader.delete(f"{RULES}/{rule['id']}"), 403, "missing_scope")
    assert_problem(writer.get(f"{RULES}/{rule['id']}"), 403, "missing_scope")


def test_without_a_token_is_401(client, assert_problem):
    assert_problem(client.get(RULES), 401)
    assert_problem(client.post(RULES, {"content": "x"}, content_type="application/json"), 401)


def test_a_source_ref_over_600_characters_as_sent_is_422_even_if_trimming_would_shorten_it(kb, assert_problem):
    # the schema's maxLength counts the value as sent: trailing whitespace (here U+0085) is not trimmed first
    from urllib.parse import urlencode

    response = kb.delete(f"{RULES}?{urlencode({'source_ref': chr(8) + chr(0x85) * 700})}")
    assert_problem(response, 422)
    assert "600" in str(response.json()["errors"]["source_ref"])
