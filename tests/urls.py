"""Production URLs plus test-only routes under /api/v1/_test/ (never in config.urls)."""

from django.urls import include, path, re_path

from apps.core.api.routers import ApiRouter
from config.urls import urlpatterns as production_urlpatterns
from tests.testapp.views import BoomView, NoteViewSet, PingView

router = ApiRouter()
router.register("_test/notes", NoteViewSet, basename="test-note")

urlpatterns = [
    re_path(r"^api/v1/_test/ping/?$", PingView.as_view()),
    re_path(r"^api/v1/_test/boom/?$", BoomView.as_view()),
    path("api/v1/", include(router.urls)),
    *production_urlpatterns,
]
