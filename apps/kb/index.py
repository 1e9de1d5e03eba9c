"""Hybrid retrieval over one widget's chunks: exact vector similarity fused with keyword search by
reciprocal rank fusion (RRF).

Vector side: an exact scan. The tenant's unit vectors (float32) are held per process as one numpy
matrix per (widget, embedding model), revalidated on every search by one primary-key read of
`KbIndex.version` (bumped in the transaction of every chunk write), so a search sees every committed
write. A question's vector is compared with every vector of the tenant: there is no approximate
index, so a tenant filter cannot drop results (the defect of HNSW plus a WHERE clause in pgvector
before 0.8): recall against exact search is 1 by construction, and `bench/kb_search.py` measures it.

Keyword side:
- PostgreSQL: full-text search on the stored generated column `tsv` (`to_tsvector('russian', ...) ||
  to_tsvector('simple', ...)`, GIN index): Russian words stemmed by the Russian Snowball stemmer and
  Latin ones by the English one (what the `russian` configuration does), plus every word as written
  (`simple`). A question's lexemes weigh by their rarity in the tenant (BM25's idf); each is looked up
  in the GIN index, which lists matching ids up to TERM_CAP, and only the RANKED best chunks by that
  cheap sum have their tsvectors read, for the exact sum and `ts_rank_cd` (`_postgres_ranking`).
- The embedded default (SQLite): the documented equivalent, Okapi BM25 (k1 1.2, b 0.75) over the same
  two kinds of terms (`apps.kb.text.terms`: the word as written and its Snowball stem), computed in
  Python from postings cached beside the vectors, bounded the same way (`_bm25_ranking`).

Fusion: weighted reciprocal rank fusion. Each side's best `CANDIDATES` are ranked; a chunk scores
sum(weight / (RRF_K + rank)) over the sides that found it; best first, ties broken by vector
similarity then newest. The vector side weighs twice the keyword side and RRF_K is 10 rather than
the customary 60: the keyword side ORs the question's words, so in a knowledge base of short rules it
lists many chunks on common words alone ("можно", "my"); with k = 60 the rank within a side barely
counts (1/61 against 1/70) and any chunk both sides list beats the model's clear first choice that
the keyword side missed.
`bench/kb_quality.py` measures keyword-only, vector-only and fused recall@5 and MRR with a real
embedding model.
"""

from __future__ import annotations

import bisect
import math
import os
import threading
from collections import OrderedDict, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from . import text as kbtext
from .models import KbChunk, KbIndex

if TYPE_CHECKING:
    import numpy as np

CANDIDATES = 50
RRF_K = 10
VECTOR_WEIGHT, KEYWORD_WEIGHT = 2.0, 1.0
MAX_QUERY_WORDS = 64
MAX_QUERY_TERMS = 32  # lexemes looked up per question (one GIN lookup each)
TERM_CAP = 10_000  # ids a lexeme's lookup reads at most; a commoner lexeme weighs as if in TERM_CAP chunks
RANKED = 2 * CANDIDATES  # chunks whose tsvectors (postings on SQLite) are read for the exact ranking
BM25_K1, BM25_B = 1.2, 0.75
REFRESH_MARGIN = timedelta(minutes=5)
FULL_RELOAD_NEW_ROWS = 5000


def _numpy():
    """numpy, imported on first use and single-threaded: a matrix-vector product over one tenant gains
    nothing from BLAS threads on a shared host, and processes that never search (beat, a worker
    between ingestions) neither load it nor carry its thread pool (which slowed a worker's warm
    shutdown past honcho's 5 s). The thread variables are set only while numpy loads (its BLAS reads
    them then), so they never leak into this process's children (`nproc` honours OMP_NUM_THREADS)."""
    names = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
    saved = {name: os.environ.get(name) for name in names}
    for name in names:
        os.environ.setdefault(name, "1")
    try:
        import numpy
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return numpy


def to_blob(vector) -> bytes:
    """A unit-length float32 blob of `vector` (cosine similarity becomes a dot product)."""
    np = _numpy()
    array = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(array))
    if norm > 0:
        array = array / norm
    return array.astype("<f4").tobytes()


def unit(vector) -> np.ndarray:
    np = _numpy()
    array = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(array))
    return array / norm if norm > 0 else array


# --- the per-process cache of a tenant's vectors and postings --------------------------------------------


@dataclass
class _Vectors:
    version: int
    ids: np.ndarray
    matrix: np.ndarray
    loaded_at: datetime | None = None

    @property
    def nbytes(self) -> int:
        return int(self.ids.nbytes + self.matrix.nbytes)


@dataclass
class _Postings:
    version: int
    ids: list[int]
    lengths: list[int]
    postings: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    nbytes: int = 0


_lock = threading.Lock()
_cache: OrderedDict[tuple, _Vectors | _Postings | _Size] = OrderedDict()


def _budget() -> int:
    return int(getattr(settings, "KB_CACHE_BYTES", 512 * 1024 * 1024))


def _remember(key: tuple, entry) -> None:
    with _lock:
        _cache[key] = entry
        _cache.move_to_end(key)
        total = sum(e.nbytes for e in _cache.values())
        while total > _budget() and len(_cache) > 1:
            _old_key, old = _cache.popitem(last=False)
            total -= old.nbytes


def _cached(key: tuple, version: int):
    with _lock:
        entry = _cache.get(key)
        if entry is not None and entry.version == version:
            _cache.move_to_end(key)
            return entry
    return None


def clear_cache() -> None:
    with _lock:
        _cache.clear()


def index_version(widget_id: int) -> int:
    return KbIndex.objects.filter(widget_id=widget_id).values_list("version", flat=True).first() or 0


def _matrix(ids: list[int], blobs: list[bytes], width: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """ids and their vectors as arrays; rows of another width than `width` (default: the most common
    one) are left out (mixed widths under one model name)."""
    np = _numpy()
    widths = [len(b) for b in blobs]
    if width is None:
        width = max(set(widths), key=widths.count) if widths else 0
    if widths.count(width) != len(widths):
        keep = [i for i, w in enumerate(widths) if w == width]
        ids, blobs = [ids[i] for i in keep], [blobs[i] for i in keep]
    matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), width // 4)
    return np.asarray(ids, dtype=np.int64), matrix


def _rows(queryset) -> tuple[list[int], list[bytes]]:
    ids, blobs = [], []
    for pk, blob in queryset.values_list("id", "embedding").iterator(chunk_size=5000):
        ids.append(pk)
        blobs.append(bytes(blob))
    return ids, blobs


def _remember_full(key: tuple, version: int, started: datetime, rows) -> _Vectors:
    ids, matrix = _matrix(*_rows(rows))
    entry = _Vectors(version, ids, matrix, loaded_at=started)
    _remember(key, entry)
    return entry


def tenant_vectors(widget_id: int, model: str, version: int) -> _Vectors:
    """The widget's vectors of `model` at `version`.

    The first search of a process loads them all. After a write (a new version) only the difference
    is read: the tenant's current ids (one narrow index-only query) tell the deleted rows and the new
    ones, whose vectors are fetched by id, and rows updated since the previous load, less
    REFRESH_MARGIN (an edit's transaction is short: its embedding is computed before it opens), are
    fetched again."""
    np = _numpy()
    key = ("v", widget_id, model)
    with _lock:
        entry = _cache.get(key)
    if entry is not None and entry.version == version:
        _remember(key, entry)
        return entry
    started = timezone.now()
    rows = KbChunk.objects.filter(widget_id=widget_id, embedding_model=model)
    if entry is None or not len(entry.ids):
        return _remember_full(key, version, started, rows)
    else:
        current = np.fromiter(rows.values_list("id", flat=True).iterator(chunk_size=20000), dtype=np.int64)
        new = np.setdiff1d(current, entry.ids, assume_unique=True)
        if len(new) > FULL_RELOAD_NEW_ROWS:
            return _remember_full(key, version, started, rows)
        changed = rows.filter(Q(id__in=new.tolist()) | Q(updated_at__gte=entry.loaded_at - REFRESH_MARGIN))
        fresh_ids, fresh_matrix = _matrix(*_rows(changed), width=entry.matrix.shape[1] * 4)
        keep = np.isin(entry.ids, current, assume_unique=True) & ~np.isin(entry.ids, fresh_ids, assume_unique=True)
        ids = np.concatenate([entry.ids[keep], fresh_ids])
        matrix = np.vstack([entry.matrix[keep], fresh_matrix]) if len(fresh_ids) else entry.matrix[keep]
    entry = _Vectors(version, ids, matrix, loaded_at=started)
    _remember(key, entry)
    return entry


def vector_ranking(vectors: _Vectors, query, k: int = CANDIDATES) -> list[tuple[int, float]]:
    """The `k` most similar chunks (exact: every vector of the tenant is compared)."""
    np = _numpy()
    if not len(vectors.ids):
        return []
    q = unit(query)
    if q.shape[0] != vectors.matrix.shape[1]:
        return []
    scores = vectors.matrix @ q
    k = min(k, len(scores))
    top = np.argpartition(-scores, k - 1)[:k]
    top = top[np.argsort(-scores[top], kind="stable")]
    return [(int(vectors.ids[i]), float(scores[i])) for i in top]


# --- the keyword side -----------------------------------------------------------------------------------


def _query_words(question: str) -> list[str]:
    seen: dict[str, None] = {}
    for word in kbtext.words(question):
        if len(seen) >= MAX_QUERY_WORDS:
            break
        seen.setdefault(word, None)
    return list(seen)


def _tsquery(lexeme: str) -> str:
    """`lexeme` as a one-lexeme tsquery literal (quoted: a backslash escapes, a quote is doubled), so
    no character of a question is read as tsquery syntax."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def _idf(tenant: int, df: int) -> float:
    return math.log(1 + (tenant - df + 0.5) / (df + 0.5))


@dataclass
class _Size:
    version: int
    chunks: int
    nbytes: int = 64


def _tenant_size(widget_id: int, version: int) -> int:
    """The tenant's chunk count at `version` (the N of the inverse document frequency), cached like
    the vectors and read again after a write."""
    key = ("n", widget_id)
    entry = _cached(key, version)
    if entry is None:
        entry = _Size(version, KbChunk.objects.filter(widget_id=widget_id).count())
        _remember(key, entry)
    return entry.chunks


# `widget_id = %s::bigint`: the GIN index's tenant column (btree_gin int8_ops) answers only a bigint
# comparison; with the small integer a driver may send, the planner cannot use the index for the
# tenant and reads every row of the tenant instead.
_LEXEMES_SQL = (
    "SELECT lexeme FROM unnest(to_tsvector('russian', %s) || to_tsvector('simple', %s)) "
    "ORDER BY positions[1], lexeme LIMIT %s"
)
_MATCHES_SQL = (
    "SELECT t.n, m.id FROM unnest(%s::tsquery[]) WITH ORDINALITY AS t(q, n) "
    "CROSS JOIN LATERAL (SELECT c.id FROM kb_kbchunk c WHERE c.widget_id = %s::bigint AND c.tsv @@ t.q "
    "LIMIT %s) m"
)
_RANK_SQL = (
    "SELECT c.id, ts_rank_cd(c.tsv, %s::tsquery), ARRAY(SELECT c.tsv @@ q FROM unnest(%s::tsquery[]) AS q) "
    "FROM kb_kbchunk c WHERE c.widget_id = %s::bigint AND c.id = ANY(%s::bigint[])"
)


def _postgres_ranking(widget_id: int, version: int, question: str, k: int) -> list[tuple[int, float]]:
    """Chunks sharing a term with `question`, best first: by the sum of the inverse document
    frequencies (BM25's idf) of the question's terms each contains, then by `ts_rank_cd` (how close
    and how often they occur), then newest. The work is bounded whatever the question:

    1. the question's lexemes, as the column's configurations make them (at most MAX_QUERY_TERMS);
    2. one GIN lookup per lexeme, each reading at most TERM_CAP matching rows (ids only: no tsvector
       is read); a lexeme found TERM_CAP times is taken to be in TERM_CAP chunks, the smallest weight
       any lexeme gets;
    3. the RANKED chunks with the best sum over what step 2 found are read and ranked exactly: the
       sum over every question lexeme they contain, and `ts_rank_cd`.
    A chunk that contains only lexemes more common than TERM_CAP may be left out of step 3; its
    score is the lowest a match can have, and the vector side, exact, still finds it."""
    words = _query_words(question)
    if not words:
        return []
    text = " ".join(words)
    with connection.cursor() as cursor:
        cursor.execute(_LEXEMES_SQL, [text, text, MAX_QUERY_TERMS])
        queries = [_tsquery(lexeme) for (lexeme,) in cursor.fetchall()]
        if not queries:
            return []
        cursor.execute(_MATCHES_SQL, [queries, widget_id, TERM_CAP])
        found: list[list[int]] = [[] for _ in queries]
        for n, pk in cursor.fetchall():
            found[n - 1].append(int(pk))
        tenant = _tenant_size(widget_id, version)
        weights = [_idf(tenant, len(ids)) for ids in found]
        cheap: dict[int, float] = defaultdict(float)
        for weight, ids in zip(weights, found, strict=True):
            for pk in ids:
                cheap[pk] += weight
        best = [pk for pk, _ in sorted(cheap.items(), key=lambda item: (-item[1], -item[0]))[:RANKED]]
        if not best:
            return []
        # Only a lexeme whose lookup stopped at TERM_CAP needs the chunks' tsvectors to tell whether
        # they contain it; the others' lookups listed every chunk that does.
        common = [n for n, ids in enumerate(found) if len(ids) >= TERM_CAP]
        cursor.execute(_RANK_SQL, [" | ".join(queries), [queries[n] for n in common], widget_id, best])
        listed = [set(ids) for ids in found]
        scored = []
        for pk, rank, hits in cursor.fetchall():
            contains = {n for n, ids in enumerate(listed) if pk in ids}
            contains |= {n for n, hit in zip(common, hits, strict=True) if hit}
            scored.append((int(pk), round(sum(weights[n] for n in sorted(contains)), 9), float(rank)))
    scored.sort(key=lambda row: (-row[1], -row[2], -row[0]))
    return [(pk, score) for pk, score, _rank in scored[:k]]


def tenant_postings(widget_id: int, version: int) -> _Postings:
    key = ("p", widget_id)
    entry = _cached(key, version)
    if entry is not None:
        return entry
    entry = _Postings(version, [], [])
    postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
    size = 0
    for pk, content in KbChunk.objects.filter(widget_id=widget_id).values_list("id", "content").iterator(2000):
        counts: dict[str, int] = defaultdict(int)
        doc_terms = kbtext.terms(content)
        for term in doc_terms:
            counts[term] += 1
        slot = len(entry.ids)
        entry.ids.append(pk)
        entry.lengths.append(len(doc_terms))
        for term, tf in counts.items():
            postings[term].append((slot, tf))
        size += 64 + 48 * len(counts)
    entry.postings, entry.nbytes = dict(postings), size
    _remember(key, entry)
    return entry


def _bm25_ranking(widget_id: int, version: int, question: str, k: int) -> list[tuple[int, float]]:
    """Okapi BM25 over the cached postings, bounded like the PostgreSQL side: a term in at most
    TERM_CAP chunks lists all of them, a more common one its TERM_CAP newest; the RANKED chunks with
    the best sum of idf over what was listed are scored exactly (every question term's frequency in
    them, found by bisection in its postings, which are in slot order)."""
    index = tenant_postings(widget_id, version)
    n = len(index.ids)
    if not n:
        return []
    average = (sum(index.lengths) / n) or 1.0
    plists = []
    for term in list(dict.fromkeys(kbtext.terms(question)))[:MAX_QUERY_TERMS]:
        plist = index.postings.get(term)
        if plist:
            plists.append((math.log(1 + (n - len(plist) + 0.5) / (len(plist) + 0.5)), plist))
    cheap: dict[int, float] = defaultdict(float)
    for idf, plist in plists:
        for slot, _tf in plist[-TERM_CAP:]:
            cheap[slot] += idf
    best = sorted(cheap.items(), key=lambda item: (-item[1], -index.ids[item[0]]))[:RANKED]
    scores = []
    for slot, _ in best:
        score = 0.0
        for idf, plist in plists:
            at = bisect.bisect_left(plist, (slot, 0))
            if at < len(plist) and plist[at][0] == slot:
                tf = plist[at][1]
                norm = tf + BM25_K1 * (1 - BM25_B + BM25_B * index.lengths[slot] / average)
                score += idf * tf * (BM25_K1 + 1) / norm
        scores.append((index.ids[slot], score))
    scores.sort(key=lambda item: (-item[1], -item[0]))
    return scores[:k]


def keyword_ranking(widget_id: int, version: int, question: str, k: int = CANDIDATES) -> list[tuple[int, float]]:
    if connection.vendor == "postgresql":
        return _postgres_ranking(widget_id, version, question, k)
    return _bm25_ranking(widget_id, version, question, k)


# --- fusion ---------------------------------------------------------------------------------------------


def fuse(vector: list[tuple[int, float]], keyword: list[tuple[int, float]], limit: int) -> list[tuple[int, float]]:
    """Weighted reciprocal rank fusion of the two rankings: (chunk id, fused score), best first."""
    fused: dict[int, float] = defaultdict(float)
    similarity = dict(vector)
    for weight, ranking in ((VECTOR_WEIGHT, vector), (KEYWORD_WEIGHT, keyword)):
        for rank, (pk, _score) in enumerate(ranking, start=1):
            fused[pk] += weight / (RRF_K + rank)
    order = sorted(fused.items(), key=lambda item: (-item[1], -similarity.get(item[0], -2.0), -item[0]))
    return order[:limit]
