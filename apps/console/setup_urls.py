"""/setup/: the first run in the browser (apps.console.setup_views)."""

from django.urls import path

from . import setup_views

app_name = "setup"

urlpatterns = [
    path("", setup_views.setup_page, name="setup"),
]
