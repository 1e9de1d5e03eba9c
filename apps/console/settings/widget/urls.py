"""/console/settings/widget/: the widget builder (appearance, texts, languages, launcher, forms,
ratings, typing preview) and, in its own module, the business hours."""

from django.urls import include, path

urlpatterns: list = [
    path("hours/", include("apps.console.settings.widget.hours_urls")),
]
