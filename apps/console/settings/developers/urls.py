"""/console/settings/developers/: the pages of the area (names: the area's slug, then `<slug>-...`)."""

urlpatterns: list = []
