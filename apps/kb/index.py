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
  (`simple`); the question's words are OR-ed (`to_tsquery('russian', a | b) || to_tsquery('simple',
  a | b)`) and ranked by `ts_rank_cd`.
- The embedded default (SQLite): the documented equivalent, Okapi BM25 (k1 1.2, b 0.75) over the same
  two kinds of terms (`apps.kb.text.terms`: the word as written and its Snowball stem), computed in
  Python from postings cached beside the vectors.

Fusion: weighted reciprocal rank fusion. Each side's best `CANDIDATES` are ranked; a chunk scores
sum(weight / (RRF_K + rank)) over the sides that found it; best first, ties broken by vector
similarity then newest. The vector side weighs twice the keyword side and RRF_K is 10 rather than
the customary 60: the keyword side ORs the question's words and `ts_rank_cd` has no inverse document
frequency, so in a knowledge base of short rules it ranks many chunks on common words alone
("можно", "my"); with k = 60 the rank within a side barely counts (1/61 against 1/70) and any chunk
both sides list beats the model's clear first choice that the keyword side missed.
`bench/kb_quality.py` measures keyword-only, vector-only and fused recall@5 and MRR with a real
embedding model.
"""

from __future__ import annotations

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
_cache: OrderedDict[tuple, _Vectors | _Postings] = OrderedDict()


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


def _postgres_ranking(widget_id: int, question: str, k: int) -> list[tuple[int, float]]:
    words = _query_words(question)
    if not words:
        return []
    expression = " | ".join(words)
    sql = (
        "SELECT c.id, ts_rank_cd(c.tsv, q.query) AS rank "
        "FROM kb_kbchunk c, (SELECT to_tsquery('russian', %s) || to_tsquery('simple', %s) AS query) q "
        "WHERE c.widget_id = %s AND c.tsv @@ q.query ORDER BY rank DESC, c.id DESC LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [expression, expression, widget_id, k])
        return [(int(pk), float(rank)) for pk, rank in cursor.fetchall()]


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
    index = tenant_postings(widget_id, version)
    n = len(index.ids)
    if not n:
        return []
    average = (sum(index.lengths) / n) or 1.0
    scores: dict[int, float] = defaultdict(float)
    for term in dict.fromkeys(kbtext.terms(question)):
        plist = index.postings.get(term)
        if not plist:
            continue
        idf = math.log(1 + (n - len(plist) + 0.5) / (len(plist) + 0.5))
        for slot, tf in plist:
            norm = tf + BM25_K1 * (1 - BM25_B + BM25_B * index.lengths[slot] / average)
            scores[slot] += idf * tf * (BM25_K1 + 1) / norm
    best = sorted(scores.items(), key=lambda item: (-item[1], -index.ids[item[0]]))[:k]
    return [(index.ids[slot], score) for slot, score in best]


def keyword_ranking(widget_id: int, version: int, question: str, k: int = CANDIDATES) -> list[tuple[int, float]]:
    if connection.vendor == "postgresql":
        return _postgres_ranking(widget_id, question, k)
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
