"""Reading /metrics's values in tests: one sample of the current exposition (every process's files
summed, the readings taken now)."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from apps.platform import metrics

__all__ = ["sample"]


def sample(name: str, **labels: str) -> float:
    """The value of the sample `name` (as exposed: `..._total`, `..._count`) with these labels; 0
    when the series does not exist yet."""
    found = [
        s.value
        for family in text_string_to_metric_families(metrics.exposition().decode())
        for s in family.samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    ]
    assert len(found) <= 1, (name, labels, found)
    return found[0] if found else 0.0
