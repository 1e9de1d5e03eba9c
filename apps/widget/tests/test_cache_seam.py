from apps.widget import services


def test_purge_makes_the_next_read_rebuild():
    builds = []

    def build():
        builds.append(1)
        return {"n": len(builds)}

    assert services.cached_public_config(widget_id=91, build=build) == {"n": 1}
    assert services.cached_public_config(widget_id=91, build=build) == {"n": 1}
    services.purge_widget_cache(widget_id=91)
    assert services.cached_public_config(widget_id=91, build=build) == {"n": 2}


def test_purge_of_a_never_cached_widget_is_fine():
    services.purge_widget_cache(widget_id=10**9)
    assert services.cached_public_config(widget_id=10**9, build=lambda: {"ok": True}) == {"ok": True}
