"""The keyword side of retrieval: a question's words weigh by their rarity in the tenant, and on
PostgreSQL only a bounded set of chunks is ranked, with the same result as ranking every match."""

import math
import random
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.kb import index, services
from apps.kb import text as kbtext
from apps.kb.testing import OfflineHooks

pytestmark = pytest.mark.django_db


def _store(widget, texts):
    embedded = OfflineHooks().embedder(widget)(texts)
    services.store_chunks(
        widget=widget, texts=texts, vectors=embedded.vectors, model=embedded.model, source_ref="manual:t"
    )
    return list(widget.kb_chunks.order_by("id").values_list("id", flat=True))


def _ranking(widget, question, k=index.CANDIDATES):
    return [pk for pk, _ in index.keyword_ranking(widget.pk, index.index_version(widget.pk), question, k)]


def test_a_rare_word_outranks_a_common_word_repeated(widget, other_widget):
    # given ten chunks about orders, one that repeats "order" and one with the rarer "refund" once
    ids = _store(widget, ["order status and tracking"] * 10 + ["order order order order status", "refund policy"])
    _store(other_widget, ["refund refund refund"] * 20)
    repeated, rare = ids[-2], ids[-1]
    # when the question names both
    ranking = _ranking(widget, "order refund")
    # then the chunk with the rare word is first and the repeated common word comes before the rest
    assert ranking[0] == rare
    assert ranking[1] == repeated
    assert set(ranking) == set(ids)


def _exact(widget_id: int, question: str, k: int) -> list[int]:
    """Every chunk of the tenant ranked without bounds: the sum of the idf of each question lexeme it
    contains (document frequencies counted over the whole tenant), then ts_rank_cd, then newest."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT lexeme FROM unnest(to_tsvector('russian', %s) || to_tsvector('simple', %s))", [question, question]
        )
        lexemes = [row[0] for row in cursor.fetchall()]
        queries = [index._tsquery(lexeme) for lexeme in lexemes]
        cursor.execute(
            "SELECT c.id, ts_rank_cd(c.tsv, %s::tsquery), ARRAY(SELECT c.tsv @@ q FROM unnest(%s::tsquery[]) q) "
            "FROM kb_kbchunk c WHERE c.widget_id = %s",
            [" | ".join(queries), queries, widget_id],
        )
        rows = cursor.fetchall()
    tenant = len(rows)
    df = [sum(hits[n] for _, _, hits in rows) for n in range(len(queries))]
    idf = [math.log(1 + (tenant - d + 0.5) / (d + 0.5)) for d in df]
    scored = [
        (pk, round(sum(idf[n] for n, hit in enumerate(hits) if hit), 9), rank) for pk, rank, hits in rows if any(hits)
    ]
    scored.sort(key=lambda row: (-row[1], -row[2], -row[0]))
    return [pk for pk, _, _ in scored[:k]]


COMMON = ["доставка", "заказ", "order", "delivery"]
RARE = [f"слово{i}" for i in range(40)] + [f"term{i}" for i in range(40)]


def _random_texts() -> list[str]:
    """150 chunks: three common words each and a few of many rare ones."""
    rng = random.Random(3)
    return [" ".join(rng.choices(COMMON, k=3) + rng.choices(RARE, k=rng.randint(1, 4))) for _ in range(150)]


def _questions(rng) -> list[str]:
    return [" ".join(rng.choices(COMMON + RARE, k=rng.randint(1, 5))) for _ in range(20)]


@pytest.mark.postgres
def test_the_bounded_ranking_equals_ranking_every_match(widget, other_widget):
    # given a tenant of random chunks over a small vocabulary (common and rare words) and another tenant
    texts = _random_texts()
    _store(widget, texts)
    _store(other_widget, texts[:50])
    rng = random.Random(4)
    for question in _questions(rng):
        # when it is searched, then the ranking equals the exact one over every chunk of the tenant
        assert _ranking(widget, question, 10) == _exact(widget.pk, question, 10), question


def test_only_the_ranked_bound_of_chunks_is_ranked(widget, monkeypatch):
    # given more chunks sharing a word than the bounds allow
    monkeypatch.setattr(index, "TERM_CAP", 4)
    monkeypatch.setattr(index, "RANKED", 3)
    ids = _store(widget, [f"заказ номер {i}" for i in range(12)] + ["заказ возврат"])
    # when a question with the common word and a rare one is searched
    with CaptureQueriesContext(connection) as queries:
        ranking = _ranking(widget, "заказ возврат")
    # then at most RANKED chunks are ranked and the rare word's chunk leads
    assert ranking[0] == ids[-1]
    assert len(ranking) == 3
    if connection.vendor == "postgresql":  # and PostgreSQL reads the tsvectors of those three only
        ranked = [q["sql"] for q in queries.captured_queries if "ts_rank_cd" in q["sql"]]
        assert len(ranked) == 1
        assert len(re.search(r"ANY\('\{([^}]*)\}'", ranked[0])[1].split(",")) == 3


def _exact_bm25(widget, question: str, k: int) -> list[int]:
    """Okapi BM25 over every chunk of the tenant, without bounds."""
    rows = list(widget.kb_chunks.values_list("id", "content"))
    docs = {pk: kbtext.terms(content) for pk, content in rows}
    average = sum(len(terms) for terms in docs.values()) / len(docs)
    scores = {}
    for term in dict.fromkeys(kbtext.terms(question)):
        df = sum(term in terms for terms in docs.values())
        if not df:
            continue
        idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
        for pk, terms in docs.items():
            tf = terms.count(term)
            if tf:
                norm = tf + index.BM25_K1 * (1 - index.BM25_B + index.BM25_B * len(terms) / average)
                scores[pk] = scores.get(pk, 0.0) + idf * tf * (index.BM25_K1 + 1) / norm
    return [pk for pk, _ in sorted(scores.items(), key=lambda item: (-item[1], -item[0]))[:k]]


def test_the_embedded_bounded_ranking_equals_bm25_over_every_chunk(widget, other_widget):
    if connection.vendor == "postgresql":
        pytest.skip("the embedded default's ranking")
    texts = _random_texts()
    _store(widget, texts)
    _store(other_widget, texts[:50])
    rng = random.Random(4)
    for question in _questions(rng):
        assert _ranking(widget, question, 10) == _exact_bm25(widget, question, 10), question


@pytest.mark.postgres
def test_a_question_of_only_common_words_still_finds_chunks(widget, monkeypatch):
    monkeypatch.setattr(index, "TERM_CAP", 4)
    ids = _store(widget, [f"заказ {i}" for i in range(12)])
    ranking = _ranking(widget, "заказ")
    assert ranking and set(ranking) <= set(ids)


def test_question_syntax_is_never_read_as_a_query(widget):
    ids = _store(widget, ["it's a back\\slash & pipe | colon: test"])
    assert _ranking(widget, "it's back\\slash & | ! ( ) : * test") == ids
