import random

from apps.widget import cache


def test_purge_makes_the_next_read_rebuild():
    widget_id = random.randrange(10**12, 10**13)  # the cache outlives test databases (Redis, files)
    builds = []

    def build():
        builds.append(1)
        return {"n": len(builds)}

    assert cache.cached_public_config(widget_id=widget_id, build=build) == {"n": 1}
    assert cache.cached_public_config(widget_id=widget_id, build=build) == {"n": 1}
    cache.purge_widget_cache(widget_id=widget_id)
    assert cache.cached_public_config(widget_id=widget_id, build=build) == {"n": 2}


def test_purge_of_a_never_cached_widget_is_fine():
    widget_id = random.randrange(10**12, 10**13)
    cache.purge_widget_cache(widget_id=widget_id)
    assert cache.cached_public_config(widget_id=widget_id, build=lambda: {"ok": True}) == {"ok": True}
