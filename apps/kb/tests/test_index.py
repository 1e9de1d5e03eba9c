"""The per-process vector cache: after writes it is refreshed by difference and always equals a
full load of the tenant's committed vectors."""

import os

import numpy as np
import pytest

from apps.kb import index, services
from apps.kb.models import KbChunk
from apps.kb.testing import OfflineHooks

pytestmark = pytest.mark.django_db


def _store(widget, hooks, texts):
    embedded = hooks.embedder(widget)(texts)
    return services.store_chunks(
        widget=widget, texts=texts, vectors=embedded.vectors, model=embedded.model, source_ref="manual:t"
    )


def _as_dict(entry):
    return {int(pk): entry.matrix[i].tobytes() for i, pk in enumerate(entry.ids)}


def test_refresh_after_create_edit_and_delete_equals_a_full_load(widget, other_widget):
    hooks = OfflineHooks()
    _store(widget, hooks, [f"правило {i}" for i in range(10)])
    _store(other_widget, hooks, ["чужое"])
    first = index.tenant_vectors(widget.pk, hooks.model, index.index_version(widget.pk))
    assert len(first.ids) == 10
    rows = list(KbChunk.objects.filter(widget=widget).order_by("id"))
    services.update_rule(
        widget=widget, rule=rows[0], changes={"content": "новое"}, embedded=hooks.embedder(widget)(["новое"])
    )
    services.delete_rule(widget=widget, rule=rows[1])
    _store(widget, hooks, ["ещё одно"])
    refreshed = index.tenant_vectors(widget.pk, hooks.model, index.index_version(widget.pk))
    index.clear_cache()
    full = index.tenant_vectors(widget.pk, hooks.model, index.index_version(widget.pk))
    assert _as_dict(refreshed) == _as_dict(full) and len(full.ids) == 10
    assert rows[1].pk not in set(refreshed.ids.tolist())
    edited = _as_dict(refreshed)[rows[0].pk]
    assert np.allclose(np.frombuffer(edited, dtype="<f4"), index.unit(hooks.embedder(widget)(["новое"]).vectors[0]))


def test_a_cached_version_is_served_without_reading_vectors(widget, django_assert_num_queries):
    hooks = OfflineHooks()
    _store(widget, hooks, ["правило"])
    version = index.index_version(widget.pk)
    index.tenant_vectors(widget.pk, hooks.model, version)
    with django_assert_num_queries(0):
        index.tenant_vectors(widget.pk, hooks.model, version)


def test_loading_numpy_leaves_the_thread_variables_of_child_processes_alone(monkeypatch):
    # OMP_NUM_THREADS=1 inherited by a child makes `nproc` (scripts/web.sh) count one core
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    index._numpy()
    assert "OMP_NUM_THREADS" not in os.environ
    assert os.environ["OPENBLAS_NUM_THREADS"] == "4"
