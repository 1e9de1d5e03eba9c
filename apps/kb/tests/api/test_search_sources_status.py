"""Search preview, sources and status."""

import pytest

from apps.kb import services
from apps.kb.hooks import AssistantInfo
from apps.kb.models import KbDocument
from apps.kb.testing import OfflineHooks
from apps.kb.tests.conftest import idem

pytestmark = pytest.mark.django_db
SEARCH, SOURCES, STATUS = "/api/v1/kb/search", "/api/v1/kb/sources", "/api/v1/kb/status"


def rule(client, content, doc_id=None):
    response = client.post("/api/v1/kb/rules", {"content": content, "doc_id": doc_id}, format="json", **idem())
    assert response.status_code == 201, response.content
    return response.json()


def test_search_ranks_the_answer_first_in_russian_and_english(kb, offline):
    delivery = rule(kb, "Доставка по Москве занимает один-два рабочих дня.")
    rule(kb, "Гарантия на электронику составляет 12 месяцев.")
    returns = rule(kb, "You can return unused items within 30 days of delivery.")
    body = kb.get(SEARCH, {"q": "сколько дней доставки в Москву?"}).json()
    assert body["mode"] == "hybrid" and body["embedding_model"] == offline.model
    assert body["data"][0]["id"] == delivery["id"]
    first = body["data"][0]
    assert set(first) >= {
        "id",
        "content",
        "doc_id",
        "source_ref",
        "button_id",
        "operator_id",
        "chunk_index",
        "regenerates",
        "score",
        "similarity",
    }
    assert [h["score"] for h in body["data"]] == sorted((h["score"] for h in body["data"]), reverse=True)
    assert kb.get(SEARCH, {"q": "How do I return an item?"}).json()["data"][0]["id"] == returns["id"]


def test_search_limit(kb, offline):
    for i in range(8):
        rule(kb, f"правило номер {i}")
    assert len(kb.get(SEARCH, {"q": "правило"}).json()["data"]) == 5
    assert len(kb.get(SEARCH, {"q": "правило", "limit": 2}).json()["data"]) == 2


def test_search_never_returns_another_widgets_chunks(kb, api, other_widget, offline):
    rule(api(["kb:read", "kb:write"], w=other_widget), "Секретный ответ про доставку")
    mine = rule(kb, "Наш ответ про оплату")
    hits = kb.get(SEARCH, {"q": "доставка", "limit": 20}).json()["data"]
    assert [h["id"] for h in hits] == [mine["id"]]


def test_search_of_an_empty_knowledge_base(kb, offline):
    assert kb.get(SEARCH, {"q": "что угодно"}).json() == {
        "data": [],
        "mode": "empty",
        "embedding_model": None,
        "assistant_id": None,
        "rag_enabled": None,
    }


def test_search_by_keywords_when_nothing_can_embed(kb, offline):
    found = rule(kb, "Самовывоз с Тверской улицы")
    with services.hooks.use_hooks(OfflineHooks(can_embed=False)):
        body = kb.get(SEARCH, {"q": "самовывоз"}).json()
    assert body["mode"] == "keyword" and [h["id"] for h in body["data"]] == [found["id"]]
    assert body["data"][0]["similarity"] is None


def test_search_provider_failure_is_502(kb, offline, assert_problem):
    rule(kb, "Самовывоз с Тверской улицы")
    with services.hooks.use_hooks(OfflineHooks(fail="timeout")):
        assert_problem(kb.get(SEARCH, {"q": "самовывоз"}), 502, "kb_embed_provider_failed")


@pytest.mark.parametrize(
    "query",
    [
        {},
        {"q": ""},
        {"q": "   "},
        {"q": "x" * 1001},
        {"q": "a", "limit": 0},
        {"q": "a", "limit": 21},
        {"q": "a", "limit": "x"},
        {"q": "a", "assistant_id": "x"},
        {"q": "a", "other": "1"},
    ],
)
def test_search_refuses_bad_parameters(kb, offline, assert_problem, query):
    assert_problem(kb.get(SEARCH, query), 422)


def test_search_as_an_assistant(kb, offline, assert_problem):
    offline.assistant_infos = [AssistantInfo(7, "Bot", True, True, True)]
    rule(kb, "Оплата картой")
    body = kb.get(SEARCH, {"q": "оплата", "assistant_id": 7}).json()
    assert body["assistant_id"] == 7 and body["rag_enabled"] is True and body["data"]
    assert_problem(kb.get(SEARCH, {"q": "оплата", "assistant_id": 8}), 404, "not_found")


def test_search_sees_every_committed_write_at_once(kb, offline):
    assert kb.get(SEARCH, {"q": "рассрочка"}).json()["data"] == []
    first = rule(kb, "Рассрочка на полгода")
    assert [h["id"] for h in kb.get(SEARCH, {"q": "рассрочка"}).json()["data"]] == [first["id"]]
    kb.patch(f"/api/v1/kb/rules/{first['id']}", {"content": "Кредит не выдаём"}, format="json", **idem())
    hits = kb.get(SEARCH, {"q": "рассрочка"}).json()["data"]
    assert hits == [] or hits[0]["content"] == "Кредит не выдаём"


def test_sources_group_rules_with_counts(
    kb, widget, offline, django_capture_on_commit_callbacks, django_assert_max_num_queries
):
    a = rule(kb, "первое")
    from django.core.files.uploadedfile import SimpleUploadedFile

    with django_capture_on_commit_callbacks(execute=True):
        doc = kb.post(
            "/api/v1/kb/uploads",
            {"file": SimpleUploadedFile("f.txt", "Текст документа".encode())},
            format="multipart",
            **idem(),
        ).json()
    with django_assert_max_num_queries(8):
        body = kb.get(SOURCES).json()
    groups = {g["source_ref"]: g for g in body["data"]}
    assert groups[a["source_ref"]]["chunk_count"] == 1 and groups[a["source_ref"]]["kind"] == "manual"
    assert groups[f"upload:{doc['id']}"]["regenerates"] is True and groups[f"upload:{doc['id']}"]["kind"] == "upload"
    assert body["next_cursor"] is None


def test_sources_are_a_cursor_list(kb, offline, assert_problem, api, other_widget):
    refs = sorted(rule(kb, f"правило {i}")["source_ref"] for i in range(5))
    page = kb.get(SOURCES, {"limit": 2}).json()
    assert [g["source_ref"] for g in page["data"]] == refs[:2]
    seen = [g["source_ref"] for g in page["data"]]
    while page["next_cursor"]:
        page = kb.get(SOURCES, {"limit": 2, "cursor": page["next_cursor"]}).json()
        seen += [g["source_ref"] for g in page["data"]]
    assert seen == refs
    cursor = kb.get(SOURCES, {"limit": 2}).json()["next_cursor"]
    assert_problem(api(["kb:read"], w=other_widget).get(SOURCES, {"cursor": cursor}), 422)
    for query in ({"limit": 0}, {"limit": 101}, {"cursor": "forged"}, {"kind": "manual"}):
        assert_problem(kb.get(SOURCES, query), 422)


def test_status_reports_indexed_and_in_use_per_assistant(kb, widget, offline):
    offline.assistant_infos = [
        AssistantInfo(1, "With RAG", True, True, True),
        AssistantInfo(2, "No RAG", True, False, False),
    ]
    body = kb.get(STATUS).json()
    assert body["indexed"] is False and body["in_use"] is False and body["chunks"] == 0
    rule(kb, "Правило")
    body = kb.get(STATUS).json()
    assert body["indexed"] is True and body["in_use"] is True and body["stale_chunks"] == 0
    assert [a["in_use"] for a in body["assistants"]] == [True, False]
    offline.enabled = False
    assert kb.get(STATUS).json()["in_use"] is False


def test_status_is_not_indexed_while_a_document_waits_or_vectors_are_stale(kb, widget, offline):
    rule(kb, "Правило")
    KbDocument.objects.create(widget=widget, name="a.txt", format="txt", size=1, sha256="0" * 64)
    body = kb.get(STATUS).json()
    assert body["indexed"] is False and body["documents"]["queued"] == 1
    KbDocument.objects.all().delete()
    with services.hooks.use_hooks(OfflineHooks(model="other:model")):
        body = kb.get(STATUS).json()
    assert body["indexed"] is False and body["stale_chunks"] == 1 and body["embedding_model"] == "other:model"


def test_status_refuses_parameters(kb, assert_problem):
    assert_problem(kb.get(STATUS, {"x": "1"}), 422)


def test_read_scopes(api, assert_problem):
    writer = api(["kb:write"])
    for path in (SEARCH + "?q=a", SOURCES, STATUS):
        assert_problem(writer.get(path), 403, "missing_scope")
