"""Test URLconf: the project's test URLs plus the widget routes (until config.urls includes them)."""

from django.urls import include, path

from tests.urls import urlpatterns as base_urlpatterns

urlpatterns = [path("api/v1/", include("apps.widget.api.urls")), *base_urlpatterns]
