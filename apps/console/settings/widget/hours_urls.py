"""/console/settings/widget/hours/: the widget's business hours."""

urlpatterns: list = []
