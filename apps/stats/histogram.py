"""The stored distribution of a duration (first response, resolution): a fixed log-scale histogram
whose buckets are counter columns of the report rollups (`DailyReportFacts`), so a median or a 90th
percentile over any days, operators or departments is a sum of rows, never a scan of chats.

Bucket 0 holds [0, 250 ms); bucket k (1 <= k < BUCKETS - 1) holds [250 ms * 2^((k-1)/4),
250 ms * 2^(k/4)), each about 19% wider than the one before; the last bucket holds everything from
about 8.6 days on. A percentile is read as the geometric middle of the bucket holding its rank, so
it is within 9.1% of the exact value (2^(1/8) - 1) up to 8.6 days; beyond, it reads as the last
bucket's lower bound.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

BUCKETS = 88
BASE_MS = 250
STEPS_PER_DOUBLING = 4

FIRST_RESPONSE = tuple(f"fr_{i:02d}" for i in range(BUCKETS))
RESOLUTION = tuple(f"rs_{i:02d}" for i in range(BUCKETS))


def lower_bound(index: int) -> float:
    return 0.0 if index == 0 else BASE_MS * 2 ** ((index - 1) / STEPS_PER_DOUBLING)


def bucket_of(ms: int) -> int:
    """The bucket of a duration in whole milliseconds (negative ones, clock skew, count as 0)."""
    if ms < BASE_MS:
        return 0
    index = int(math.floor(math.log2(ms / BASE_MS) * STEPS_PER_DOUBLING)) + 1
    # log2 of an exact bucket edge may land a hair below it
    while index + 1 < BUCKETS and ms >= lower_bound(index + 1):
        index += 1
    while index > 1 and ms < lower_bound(index):
        index -= 1
    return min(index, BUCKETS - 1)


def representative_ms(index: int) -> int:
    """The value a percentile in bucket `index` reads as."""
    if index == 0:
        return BASE_MS // 2
    if index == BUCKETS - 1:
        return round(lower_bound(index))
    return round(math.sqrt(lower_bound(index) * lower_bound(index + 1)))


def percentile_ms(counts: Sequence[int], q: float) -> int | None:
    """The q-quantile (0 < q <= 1) of the durations counted in `counts`, by nearest rank: the
    smallest value with at least q of the samples at or below it. None without samples."""
    total = sum(counts)
    if total <= 0:
        return None
    rank = max(1, math.ceil(q * total))
    seen = 0
    for index, n in enumerate(counts):
        seen += n
        if seen >= rank:
            return representative_ms(index)
    return representative_ms(len(counts) - 1)


def one(columns: Sequence[str], ms: int | None) -> dict[str, int]:
    """The counters one duration adds (nothing for None)."""
    return {} if ms is None else {columns[bucket_of(ms)]: 1}
