"""/console/settings/widget/hours/: the widget's business hours."""

from django.urls import path

from . import hours

urlpatterns: list = [
    path("", hours.business_hours, name="widget-hours"),
    path("reset/", hours.reset, name="widget-hours-reset"),
]
