"""The benchmark's direct SQL count (bench/lib/stats_direct.py) computes the same figures as the
Python reference of these tests, on PostgreSQL, so the benchmark's equality check means what the
property test means."""

import random

import pytest
from django.db import connection

from bench.lib import stats_direct

from . import reference
from .conftest import Conversations, msk
from .test_property import START, run

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def random_steps(seed: int, count: int = 120) -> list:
    rng = random.Random(seed)
    steps = []
    for _ in range(count):
        gap, seconds = rng.choice([0, 1, 6, 7, 8, 55, 360, 1439, 1440]), rng.randint(0, 59)
        kind = rng.choice(["visit", "visit", "client", "reply", "reply", "accept", "transfer", "rate"])
        chat = rng.randint(0, 50)
        operation = {
            "visit": ("visit", rng.choice(["widget", "tg", "vk"])),
            "client": ("client", chat),
            "reply": ("reply", chat, rng.choice(["human", "other", "ai"]), rng.choice(["public", "public", "note"])),
            "accept": ("accept", chat, rng.choice(["human", "other"])),
            "transfer": ("transfer", chat, rng.choice(["human", "other"])),
            "rate": ("rate", chat, rng.randint(1, 5)),
        }[kind]
        steps.append((gap, seconds, operation))
    return steps


@pytest.mark.parametrize("seed", [1, 2])
def test_direct_sql_equals_the_reference(widget, clock, seed):
    talk = Conversations(widget, clock)
    run(talk, random_steps(seed))
    windows = [(msk(2025, 3, 30), msk(2025, 4, 20)), (START.replace(minute=37), msk(2025, 4, 2, 9, 15))]
    with connection.cursor() as cur:
        for start, end in windows:
            expected = reference.widget_stats(widget, start, end)
            first = expected.pop("avg_first_response_seconds")
            assert stats_direct.widget_stats(cur, widget.pk, start, end) == expected
            assert stats_direct.first_response(cur, widget.pk, start, end) == {"avg_first_response_seconds": first}
            assert stats_direct.channel_stats(cur, widget.pk, start, end) == reference.channel_stats(widget, start, end)
            assert stats_direct.agent_stats(cur, widget.pk, start, end) == reference.agent_stats(widget, start, end)
            one = talk.other.pk
            assert stats_direct.agent_stats(cur, widget.pk, start, end, agent_id=one) == {
                one: reference.agent_stats(widget, start, end)[one]
            }
            buckets = stats_direct.timeseries(cur, widget.pk, start, end)
            for bucket in buckets:
                direct = reference.widget_stats(
                    widget, *(stats_direct.datetime.fromisoformat(bucket[k]) for k in ("from", "to"))
                )
                assert bucket["metrics"] == {m: direct[m] for m in bucket["metrics"]}
