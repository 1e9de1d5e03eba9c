"""/console/settings/channels/: the pages of the area (names: the area's slug, then `<slug>-...`)."""

urlpatterns: list = []
